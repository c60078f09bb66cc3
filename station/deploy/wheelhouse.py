"""Hash-pinned wheelhouses: how engine images are built without a package index.

A lock file lists every wheel as `name==version --hash=sha256:...`. The same
folder of wheels builds the CPU engine image here and installs vLLM on an
air-gapped host.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from station.errors import StationError

# The engine images run Debian 12's CPython 3.11 (glibc 2.36) on x86_64. Name its
# tags in pip's own order of preference, so any controller picks the same files.
GLIBC_MINORS = range(36, 16, -1)
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in GLIBC_MINORS] + ["manylinux2014_x86_64", "linux_x86_64"]
TARGET = ["--python-version", "3.11", "--implementation", "cp", *(f"--platform={tag}" for tag in PLATFORMS)]


def locked_files(lock: Path) -> dict[str, str]:
    """Map of requirement (`name==version`) to sha256 from a lock file."""
    pins = {}
    for line in lock.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            requirement, _, digest = line.partition(" --hash=sha256:")
            pins[requirement.strip()] = digest.strip()
    return pins


def is_complete(lock: Path, folder: Path) -> bool:
    """True when the folder holds a wheel with the locked hash for every pin."""
    if not folder.is_dir():
        return False
    present = {sha256(wheel) for wheel in folder.glob("*.whl")}
    return set(locked_files(lock).values()) <= present


def download(lock: Path, folder: Path) -> None:
    """Fetch exactly the locked wheels (hash-checked by pip) into folder."""
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--require-hashes",
        *TARGET,
        "-r",
        str(lock),
        "-d",
        str(folder),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise StationError(
            f"could not download the wheels pinned in {lock}:\n{result.stderr[-2000:]}",
            "check access to PyPI (torch +cpu builds come from https://download.pytorch.org/whl/cpu: "
            "set PIP_EXTRA_INDEX_URL), or copy a wheelhouse built elsewhere into " + str(folder),
        )


def ensure(lock: Path, folder: Path) -> Path:
    if not is_complete(lock, folder):
        download(lock, folder)
    return folder


def write_lock(folder: Path, lock: Path, header: str) -> None:
    """Record every wheel in folder with its hash (maintainers, after `pip download`)."""
    lines = [f"# {line}" for line in header.splitlines()]
    for wheel in sorted(folder.glob("*.whl"), key=lambda p: p.name.lower()):
        name, version = wheel.name.split("-")[:2]
        lines.append(f"{name.lower().replace('_', '-')}=={version} --hash=sha256:{sha256(wheel)}")
    lock.write_text("\n".join(lines) + "\n")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
