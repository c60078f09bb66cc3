"""A user's own station deployment on this machine, which the suite must leave as it was.

The suite deploys the local host under names, a network, ports, volumes and a data folder of its own
(tests/fixtures/inventory/host_vars/local.yml). What a user's `invoke deploy --host local` runs is named by the roles'
defaults and the shipped inventory: `state` reads it as it stands (absent parts as absent), once before the suite and
once after, and `differences` names what changed. Its key is in the checkout's .station/, which tests/conftest.py
watches with results/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import docker
import yaml
from docker.errors import DockerException, NotFound

from station import paths
from station.deploy import inventory

ROLES = ("vllm_server", "vllm_router", "vllm_bench", "prometheus", "node_exporter", "dcgm_exporter", "grafana")
VOLUMES = (("prometheus", "prometheus_data_volume"), ("grafana", "grafana_data_volume"))
DATA_DIR = Path.home() / ".local" / "share" / "station"  # the shipped host_vars/local.yml's station_data_dir


def _containers() -> list[str]:
    names = [inventory.role_default(role, f"{role}_container_name") for role in ROLES]
    return [*names, f"{names[0]}-candidate"]  # the vllm_server role's candidate, beside its live engine


def _network() -> str:
    return yaml.safe_load((paths.ANSIBLE / "inventory" / "group_vars" / "all.yml").read_text())["station_network_name"]


def snapshot(folder: Path) -> dict[str, float]:
    """Every file under a folder with its modification time: what a test must leave as it was."""
    return {str(p): p.stat().st_mtime for p in folder.rglob("*")} if folder.exists() else {}


def state() -> dict[str, Any]:
    """Each of the user's containers (its id, start and status) or None, its network's id, its volumes, and every file
    of its data folder with its modification time."""
    found: dict[str, Any] = {"files": snapshot(DATA_DIR)}
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except DockerException:
        return found | {"docker": "unreachable"}
    for name in _containers():
        try:
            container = client.api.inspect_container(name)
            found[name] = (container["Id"], container["State"]["StartedAt"], container["State"]["Status"])
        except NotFound:
            found[name] = None
    network = _network()
    found[f"network {network}"] = next((n.id for n in client.networks.list(names=[network]) if n.name == network), None)
    existing = {volume.name for volume in client.volumes.list()}
    for role, setting in VOLUMES:
        volume = inventory.role_default(role, setting)
        found[f"volume {volume}"] = volume in existing
    return found


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What changed, by name: a container, the network, a volume, or the data folder."""
    changed = [
        f"{key}: {before.get(key)} -> {after.get(key)}"
        for key in before.keys() - {"files"}
        if before.get(key) != after.get(key)
    ]
    if before["files"] != after["files"]:
        touched = sorted(set(before["files"].items()) ^ set(after["files"].items()))
        changed.append(f"{DATA_DIR}: {', '.join(path for path, _ in touched[:5])}")
    return changed
