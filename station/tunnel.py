"""SSH port-forwards to a host's services, which listen on its loopback only."""

from __future__ import annotations

import json
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from station import actions, inventory, playbook

# Service → the role whose <role>_port and <role>_bind_address say where it listens.
SERVICES = {
    "engine API": "vllm_server",
    "Prometheus": "prometheus",
    "Grafana": "grafana",
    "node exporter": "node_exporter",
    "DCGM exporter": "dcgm_exporter",
}


@dataclass(frozen=True)
class Forward:
    service: str
    port: int
    remote_address: str


def forwards(settings: dict[str, Any]) -> list[Forward]:
    """Each service's port, as the inventory sets it or the role defaults it; 0.0.0.0 is reached on loopback."""
    found = []
    for service, role in SERVICES.items():
        port = int(settings.get(f"{role}_port", inventory.role_default(role, f"{role}_port")))
        address = settings.get(f"{role}_bind_address", inventory.role_default(role, f"{role}_bind_address"))
        found.append(Forward(service, port, "127.0.0.1" if address == "0.0.0.0" else address))
    return found


def ssh_argv(connection: dict[str, Any]) -> list[str]:
    argv = ["ssh", "-N", "-o", "ExitOnForwardFailure=yes", "-p", str(connection["port"])]
    if connection["private_key"]:
        argv += ["-i", connection["private_key"]]
    argv += shlex.split(connection["ssh_args"])
    for forward in forwards(connection["settings"]):
        argv += ["-L", f"{forward.port}:{forward.remote_address}:{forward.port}"]
    target = f"{connection['user']}@{connection['address']}" if connection["user"] else connection["address"]
    return [*argv, target]


def describe(host: str, console: Console) -> dict[str, Any]:
    """The host's connection settings and service ports, templated by Ansible."""
    inventory.host_vars(host)
    with tempfile.TemporaryDirectory(prefix="station-tunnel-") as out:
        playbook.run("tunnel", host, actions.controller_vars() | {"station_output_dir": out}, console)
        return json.loads((Path(out) / "tunnel.json").read_text())
