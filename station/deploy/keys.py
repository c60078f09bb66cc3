"""The engine API key the vllm_server role generates for each host, as the controller keeps it."""

from __future__ import annotations

from pathlib import Path

from station import paths
from station.deploy import inventory
from station.errors import StationError


def api_key_file(host: str) -> Path:
    """Where the controller keeps the host's engine API key (the vllm_server role generates it there): a fleet's
    hosts share their router host's (station_fleet_router, ansible/inventory/group_vars/all.yml)."""
    return paths.SECRETS / inventory.host_vars(host).get("station_fleet_router", host) / "vllm_api_key"


def api_key(host: str) -> str:
    """The host's engine API key, or a clear error when nothing was deployed there yet."""
    inventory.host_vars(host)
    key_file = api_key_file(host)
    if not key_file.is_file():
        raise StationError(f"no API key for {host} at {key_file}", f"deploy first: invoke deploy --host {host}")
    return key_file.read_text().strip()
