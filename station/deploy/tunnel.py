"""SSH port-forwards to a host's services, which listen on its loopback only, and to its Docker engine's socket."""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from station.deploy import inventory, playbook
from station.errors import StationError

# Service → (the role whose <role>_bind_address says where it listens, the setting naming its port).
SERVICES = {
    "API (router)": ("vllm_router", "vllm_router_port"),  # what clients use
    "engine": ("vllm_server", "vllm_server_port"),  # behind the router: its own /metrics, /version
    "candidate engine": ("vllm_server", "vllm_server_candidate_port"),  # beside it, while one is on trial
    "Prometheus": ("prometheus", "prometheus_port"),
    "Grafana": ("grafana", "grafana_port"),
    "node exporter": ("node_exporter", "node_exporter_port"),
    "DCGM exporter": ("dcgm_exporter", "dcgm_exporter_port"),
}


@dataclass(frozen=True)
class Forward:
    service: str
    port: int  # on this machine's loopback
    remote_address: str
    remote_port: int | None = None  # on the host; the same port when None

    @property
    def spec(self) -> str:
        return f"127.0.0.1:{self.port}:{self.remote_address}:{self.remote_port or self.port}"

    def is_open(self) -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", self.port)) == 0


@dataclass(frozen=True)
class SocketForward:
    """A unix socket of the host's (its Docker engine's) as a unix socket here."""

    service: str
    local: Path
    remote: str

    @property
    def spec(self) -> str:
        return f"{self.local}:{self.remote}"

    def is_open(self) -> bool:
        with socket.socket(socket.AF_UNIX) as probe:
            return probe.connect_ex(str(self.local)) == 0


# Where Docker's engine listens on a host (dockerd's default, which provisioning keeps)
DOCKER_SOCKET = "/var/run/docker.sock"


def forwards(settings: dict[str, Any]) -> list[Forward]:
    """Each service's port, as the inventory sets it or the role defaults it; 0.0.0.0 is reached on loopback."""
    found = []
    for service, (role, port_setting) in SERVICES.items():
        port = int(inventory.setting(settings, role, port_setting))
        address = inventory.setting(settings, role, f"{role}_bind_address")
        found.append(Forward(service, port, "127.0.0.1" if address == "0.0.0.0" else address))
    return found


def ssh_argv(connection: dict[str, Any], chosen: list[Forward] | list[SocketForward] | None = None) -> list[str]:
    """`ssh -N` with a local forward for each service (all of them unless `chosen`), bound to 127.0.0.1 only."""
    argv = ["ssh", "-N", "-o", "ExitOnForwardFailure=yes", "-p", str(connection["port"])]
    if connection["private_key"]:
        argv += ["-i", connection["private_key"]]
    argv += shlex.split(connection["ssh_args"])
    for forward in chosen or forwards(connection["settings"]):
        argv += ["-L", forward.spec]
    target = f"{connection['user']}@{connection['address']}" if connection["user"] else connection["address"]
    return [*argv, target]


# Each host's description, once per process: a command that forwards to a host several times (a promotion's gates,
# a tune's trials) asks Ansible once, as the inventory it reads is read once (station/deploy/inventory.py).
_described: dict[str, dict[str, Any]] = {}


def describe(host: str, console: Console) -> dict[str, Any]:
    """The host's connection settings and service ports, templated by Ansible."""
    inventory.host_vars(host)
    if host not in _described:
        with tempfile.TemporaryDirectory(prefix="station-tunnel-") as out:
            playbook.run("tunnel", host, {"station_output_dir": out}, console)
            _described[host] = json.loads((Path(out) / "tunnel.json").read_text())
    return _described[host]


def free_local_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


API = "API (router)"
ENGINE = "engine"
CANDIDATE = "candidate engine"
PROMETHEUS = "Prometheus"


@contextmanager
def urls(host: str, console: Console, services: tuple[str, ...] = (API,)) -> Iterator[dict[str, str]]:
    """Each service's root URL as this machine reaches it: directly on a local host, else through one SSH
    connection forwarding each to a free local port."""
    connection = describe(host, console)
    remote = {forward.service: forward for forward in forwards(connection["settings"]) if forward.service in services}
    if connection["connection"] == "local":
        yield {service: f"http://{forward.remote_address}:{forward.port}" for service, forward in remote.items()}
        return
    local = {service: Forward(service, free_local_port(), f.remote_address, f.port) for service, f in remote.items()}
    with _forwarding(connection, list(local.values())):
        yield {service: f"http://127.0.0.1:{forward.port}" for service, forward in local.items()}


@contextmanager
def docker_socket(host: str, console: Console) -> Iterator[str]:
    """The host's Docker engine through one SSH connection, as the base URL of a unix socket here: the SSH user's
    own access to it (provisioning puts that user in the docker group)."""
    connection = describe(host, console)
    with tempfile.TemporaryDirectory(prefix="station-docker-") as folder:
        forward = SocketForward("Docker engine", Path(folder) / "docker.sock", DOCKER_SOCKET)
        with _forwarding(connection, [forward]):
            yield f"unix://{forward.local}"


@contextmanager
def _forwarding(connection: dict[str, Any], chosen: list[Forward] | list[SocketForward]) -> Iterator[None]:
    """One `ssh -N` holding these forwards, open before the body runs, closed after."""
    ssh = subprocess.Popen(
        ssh_argv(connection, chosen),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for forward in chosen:
            _wait_open(ssh, forward)
        yield
    finally:
        ssh.terminate()
        ssh.wait(timeout=10)


def _wait_open(ssh: subprocess.Popen, forward: Forward | SocketForward, timeout_s: float = 30) -> None:
    fix = "check the SSH access (invoke tunnel --print-only shows the ssh command)"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ssh.poll() is not None:
            error = ssh.stderr.read().decode(errors="replace").strip() if ssh.stderr else ""
            raise StationError(f"the SSH forward to the {forward.service} failed: {error}", fix)
        if forward.is_open():
            return
        time.sleep(0.2)
    raise StationError(f"the SSH forward to the {forward.service} did not open within {timeout_s:.0f} s", fix)
