"""One command at a time per host, one build of an image at a time per controller.

A deploy must not replace the engine under a running benchmark: the host lock is
an flock on .station/locks/<host>.lock, held for the whole command and released
by the kernel when the process ends, however it ends; the file says who holds
it, for the error the next command prints. The same claim (a Holder) goes to the
host with every playbook the command runs (ansible/playbooks/lock.yml), so a
command from another controller is refused there too; the command frees it when
it ends (tasks.py). Commands for two hosts may run at once, but they share the
controller's Docker engine and wheel cache: an image's build lock makes the
second wait while the first builds that image on this engine, then find it
built (different images build side by side), and the wheel lock lets one at a
time fill the cache (hosts that build their own images build side by side).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from station import paths
from station.errors import StationError


def _file(name: str) -> Path:
    path = paths.STATE / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def builds(image: str) -> AbstractContextManager[None]:
    """Hold the build lock of one image on this controller's Docker engine while the block runs, waiting while another
    command (or another of this command's builds) holds it; other images build alongside."""
    return _controller("builds-" + re.sub(r"[^A-Za-z0-9._-]", "_", image))


def wheels() -> AbstractContextManager[None]:
    """Hold the lock of this controller's wheel cache (filled for any engine's build, and for the bundle)."""
    return _controller("wheels")


@contextmanager
def _controller(name: str) -> Iterator[None]:
    with _file(f"controller/{name}").open("a") as handle:  # a folder no host name can be
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass
class Holder:
    """Who holds a host's lock: one command of one controller (its machine and state folder)."""

    command: str
    started: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    pid: int = field(default_factory=os.getpid)
    controller: str = field(default_factory=socket.gethostname)
    state: str = field(default_factory=lambda: str(paths.STATE))
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    taken_on_host: bool = field(default=False, compare=False)

    def claim(self) -> dict[str, object]:
        """What the host's lock file records (ansible/library/station_lock.py)."""
        return {key: value for key, value in asdict(self).items() if key != "taken_on_host"}


_held: dict[str, Holder] = {}


def held(name: str) -> Holder | None:
    """The holder of `name`'s lock in this process, while a command holds it."""
    return _held.get(name)


BUSY_HINT = "wait for it to finish, or stop it; nothing was changed"


@contextmanager
def host(name: str, command: str) -> Iterator[Holder]:
    """Hold `name`'s lock while the block runs, or fail at once saying who holds it."""
    with _file(name).open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise StationError(f"{name} is busy: {holder(handle.read())}", BUSY_HINT) from None
        claim = Holder(command)
        handle.truncate(0)
        handle.write(json.dumps(claim.claim()))
        handle.flush()
        _held[name] = claim
        try:
            yield claim
        finally:
            del _held[name]
            fcntl.flock(handle, fcntl.LOCK_UN)


def describe(held: dict[str, object]) -> str:
    """A holder as the busy error names it (the host's lock module says it the same way)."""
    said = f"invoke {held['command']} started at {held['started']} by pid {held['pid']}"
    return f"{said} on {held['controller']}" if "controller" in held else said


def holder(text: str) -> str:
    try:
        return describe(json.loads(text))
    except (ValueError, KeyError, TypeError):
        return "another station command holds its lock"
