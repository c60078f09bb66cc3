"""The simulated host `sim`: a Debian container reached over SSH, able to run its own Docker engine.

It stands in for a GPU host in tests and on machines without one: Ansible
provisions and deploys into it over SSH exactly as into a DGX. It has no GPU
(its inventory entry sets station_allow_no_gpu). Nested Docker works without
--privileged with the run options below.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from pathlib import Path

from docker.errors import NotFound
from rich.console import Console

from station import paths
from station.deploy import images
from station.errors import StationError

IMAGE = "station.invalid/sim-host:bookworm"
CONTAINER = "station-sim"
DOCKER_VOLUME = "station-sim-docker"
SSH_PORT = 2222
USER = "station"


def secrets_dir() -> Path:
    return paths.private_dir(paths.SECRETS / "sim")


def ensure_key() -> Path:
    """An ed25519 key pair for the sim's sudo user, generated once on the controller."""
    key = secrets_dir() / "id_ed25519"
    if not key.exists():
        result = subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "station-sim", "-f", str(key)],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise StationError(f"ssh-keygen failed: {result.stderr.strip()}", "install openssh-client")
    authorized = secrets_dir() / "authorized_keys"
    authorized.mkdir(mode=0o755, exist_ok=True)
    (authorized / USER).write_text(key.with_suffix(".pub").read_text())
    return key


def up(console: Console) -> None:
    """Start the simulated host (building its image first) and record its SSH host key."""
    engine = images.client()
    images.ensure(engine, IMAGE, "sim-host", console)
    ensure_key()
    try:
        container = engine.containers.get(CONTAINER)
        if container.status != "running":
            container.start()
    except NotFound:
        container = engine.containers.run(
            IMAGE,
            name=CONTAINER,
            hostname="sim",
            detach=True,
            cap_add=["ALL"],
            cap_drop=["SYS_RESOURCE"],
            security_opt=["seccomp=unconfined", "apparmor=unconfined"],
            cgroupns="host",
            tmpfs={"/run": ""},
            volumes={
                "/sys/fs/cgroup": {"bind": "/sys/fs/cgroup", "mode": "rw"},
                DOCKER_VOLUME: {"bind": "/var/lib/docker", "mode": "rw"},
                str(secrets_dir() / "authorized_keys"): {"bind": "/etc/ssh/authorized_keys", "mode": "ro"},
            },
            ports={"22/tcp": ("127.0.0.1", SSH_PORT)},
        )
    _record_host_key(container)
    _wait_for_ssh()
    console.print(f"sim is up: ssh -p {SSH_PORT} -i {secrets_dir() / 'id_ed25519'} {USER}@127.0.0.1")


def _record_host_key(container, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = container.exec_run(["cat", "/etc/ssh/ssh_host_ed25519_key.pub"])
        if result.exit_code == 0:
            kind, key = result.output.decode().split()[:2]
            (secrets_dir() / "known_hosts").write_text(f"[127.0.0.1]:{SSH_PORT} {kind} {key}\n")
            return
        time.sleep(0.5)
    raise StationError("the simulated host did not generate its SSH host key", f"see `docker logs {CONTAINER}`")


def _wait_for_ssh(timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", SSH_PORT), timeout=2) as conn:
                if conn.recv(4).startswith(b"SSH-"):
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise StationError(
        f"sshd on the simulated host does not answer on 127.0.0.1:{SSH_PORT}", f"see `docker logs {CONTAINER}`"
    )


def down(console: Console) -> None:
    """Remove the simulated host and its Docker data (what it was provisioned with is gone)."""
    engine = images.client()
    for remove in (
        lambda: engine.containers.get(CONTAINER).remove(force=True),
        lambda: engine.volumes.get(DOCKER_VOLUME).remove(force=True),
    ):
        with contextlib.suppress(NotFound):
            remove()
    console.print("sim is gone")
