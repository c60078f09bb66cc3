"""Simulated hosts (`sim`, `sim2`: the inventory's `sims` group): Debian containers reached over SSH, each able to
run its own Docker engine.

They stand in for GPU hosts in tests and on machines without one: Ansible
provisions and deploys into them over SSH exactly as into a DGX. They have no
GPU (their group sets station_allow_no_gpu). Nested Docker works without
--privileged with the run options below. They share one private network, as the
hosts of a fleet do, each at the address its inventory entry gives
(station_private_address); this machine reaches each one's sshd on its own
loopback port (ansible_port).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from docker.errors import NotFound
from docker.types import EndpointConfig, IPAMConfig, IPAMPool
from rich.console import Console

from station import paths
from station.deploy import images, inventory
from station.errors import StationError

IMAGE = "station.invalid/sim-host:bookworm"
GROUP = "sims"
USER = "station"
# The simulated hosts' private network: an unusual /24, so that it meets no network of this machine's
NETWORK = "station-sims"
SUBNET = ipaddress.ip_network("172.30.99.0/24")


@dataclass(frozen=True)
class SimHost:
    """A simulated host as its inventory entry places it."""

    name: str
    ssh_port: int
    address: str  # on NETWORK, where the other simulated hosts reach it

    @property
    def container(self) -> str:
        return f"station-{self.name}"

    @property
    def docker_volume(self) -> str:
        return f"station-{self.name}-docker"


def host(name: str = "sim") -> SimHost:
    """The simulated host `name` of the inventory's sims group, or a clear error naming them."""
    settings = inventory.host_vars(name)
    members = inventory.targets(GROUP)
    if name not in members:
        raise StationError(f"{name} is not a simulated host", f"the simulated hosts: {', '.join(members)}")
    address = settings.get("station_private_address", "")
    if not address or ipaddress.ip_address(address) not in SUBNET:
        raise StationError(
            f"{name}'s station_private_address {address!r} is not on the simulated hosts' network {SUBNET}",
            f"give {name} an address in {SUBNET} in ansible/inventory/hosts.yml",
        )
    return SimHost(name, int(settings["ansible_port"]), address)


def secrets_dir(name: str = "sim") -> Path:
    return paths.private_dir(paths.SECRETS / name)


def ensure_key(name: str = "sim") -> Path:
    """An ed25519 key pair for the simulated host's sudo user, generated once on the controller."""
    key = secrets_dir(name) / "id_ed25519"
    if not key.exists():
        result = subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"station-{name}", "-f", str(key)],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise StationError(f"ssh-keygen failed: {result.stderr.strip()}", "install openssh-client")
    authorized = secrets_dir(name) / "authorized_keys"
    authorized.mkdir(mode=0o755, exist_ok=True)
    (authorized / USER).write_text(key.with_suffix(".pub").read_text())
    return key


def up(console: Console, name: str = "sim") -> None:
    """Start the simulated host (building its image and the hosts' network first) and record its SSH host key."""
    sim = host(name)
    engine = images.client()
    images.ensure(engine, IMAGE, "sim-host", console)
    ensure_key(name)
    _ensure_network(engine)
    try:
        container = engine.containers.get(sim.container)
        if container.status != "running":
            container.start()
    except NotFound:
        container = engine.containers.run(
            IMAGE,
            name=sim.container,
            hostname=name,
            detach=True,
            cap_add=["ALL"],
            cap_drop=["SYS_RESOURCE"],
            security_opt=["seccomp=unconfined", "apparmor=unconfined"],
            cgroupns="host",
            tmpfs={"/run": ""},
            volumes={
                "/sys/fs/cgroup": {"bind": "/sys/fs/cgroup", "mode": "rw"},
                sim.docker_volume: {"bind": "/var/lib/docker", "mode": "rw"},
                str(secrets_dir(name) / "authorized_keys"): {"bind": "/etc/ssh/authorized_keys", "mode": "ro"},
            },
            ports={"22/tcp": ("127.0.0.1", sim.ssh_port)},
            network=NETWORK,
            networking_config={NETWORK: EndpointConfig(engine.api.api_version, ipv4_address=sim.address)},
        )
    _wait_for_ssh(sim)
    _record_host_key(sim, container)
    console.print(f"{name} is up: ssh -p {sim.ssh_port} -i {secrets_dir(name) / 'id_ed25519'} {USER}@127.0.0.1")


def network(engine) -> list:
    """The simulated hosts' network, when it exists (Docker's name filter also matches names that begin with it)."""
    return [network for network in engine.networks.list(names=[NETWORK]) if network.name == NETWORK]


def _ensure_network(engine) -> None:
    if not network(engine):
        engine.networks.create(NETWORK, driver="bridge", ipam=IPAMConfig(pool_configs=[IPAMPool(subnet=str(SUBNET))]))


def _record_host_key(sim: SimHost, container) -> None:
    """Trust the key sshd serves, read once sshd answers: sim-init starts sshd after ssh-keygen has written it."""
    result = container.exec_run(["cat", "/etc/ssh/ssh_host_ed25519_key.pub"])
    fields = result.output.decode().split()
    if result.exit_code != 0 or len(fields) < 2:
        raise StationError(f"{sim.name} has no SSH host key", f"see `docker logs {sim.container}`")
    kind, key = fields[:2]
    (secrets_dir(sim.name) / "known_hosts").write_text(f"[127.0.0.1]:{sim.ssh_port} {kind} {key}\n")


def _wait_for_ssh(sim: SimHost, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", sim.ssh_port), timeout=2) as conn:
                if conn.recv(4).startswith(b"SSH-"):
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise StationError(
        f"sshd on {sim.name} does not answer on 127.0.0.1:{sim.ssh_port}", f"see `docker logs {sim.container}`"
    )


def down(console: Console, name: str = "sim") -> None:
    """Remove the simulated host and its Docker data (what it was provisioned with is gone)."""
    sim = host(name)
    engine = images.client()
    for remove in (
        lambda: engine.containers.get(sim.container).remove(force=True),
        lambda: engine.volumes.get(sim.docker_volume).remove(force=True),
    ):
        with contextlib.suppress(NotFound):
            remove()
    for found in network(engine):
        found.reload()
        if not found.containers:  # the last simulated host is gone
            found.remove()
    console.print(f"{name} is gone")
