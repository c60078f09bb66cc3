"""One command at a time per host, one image build at a time per controller.

A deploy must not replace the engine under a running benchmark: the host lock is
an flock on .station/locks/<host>.lock, held for the whole command and released
by the kernel when the process ends, however it ends; the file says who holds
it, for the error the next command prints. Commands for two hosts may run at
once, but they share the controller's Docker engine and caches: the build lock
makes the second wait while the first builds, then find the image built.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from station import paths
from station.errors import StationError


def _file(name: str) -> Path:
    path = paths.STATE / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def builds() -> Iterator[None]:
    """Hold the controller's build lock while the block runs, waiting while another command holds it."""
    with _file("controller/builds").open("a") as handle:  # a folder no host name can be
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def host(name: str, command: str) -> Iterator[None]:
    """Hold `name`'s lock while the block runs, or fail at once saying who holds it."""
    with _file(name).open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            busy = f"{name} is busy: {holder(handle.read())}"
            raise StationError(busy, "wait for it to finish, or stop it; nothing was changed") from None
        handle.truncate(0)
        started = datetime.now(UTC).isoformat(timespec="seconds")
        handle.write(json.dumps({"command": command, "started": started, "pid": os.getpid()}))
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def holder(text: str) -> str:
    try:
        held = json.loads(text)
        return f"invoke {held['command']} started at {held['started']} by pid {held['pid']}"
    except (ValueError, KeyError):
        return "another station command holds its lock"
