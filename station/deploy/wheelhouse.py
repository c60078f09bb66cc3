"""Hash-pinned wheelhouses: how images are built without a package index.

A lock file lists every requirement as `name==version --hash=sha256:...`, one
hash for each architecture's wheel where they differ (pip accepts any of them),
and names the architectures it covers in its header. The wheels of one
architecture are kept in a folder of their own; the same folder builds an image
for a host of that architecture and installs vLLM on an air-gapped host.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

from station import paths
from station.errors import StationError

ARCHITECTURES = ("x86_64", "aarch64")
# The images run Debian 12's CPython 3.11 (glibc 2.36). Name its tags in pip's own order of preference, so any
# controller picks the same files for an architecture.
GLIBC_MINORS = range(36, 16, -1)
COVERS = re.compile(r"^# architectures: (.+)$", re.MULTILINE)
PIN = re.compile(r"^(\S+==\S+)((?:\s+--hash=sha256:[0-9a-f]{64})+)\s*$")
DIGESTS = ".digests.json"  # in a folder of wheels: each wheel's sha256, with the size and time it was computed for


def target(architecture: str) -> list[str]:
    """pip's options that choose the wheels Debian 12's CPython 3.11 installs on `architecture`."""
    platforms = [f"manylinux_2_{minor}_{architecture}" for minor in GLIBC_MINORS]
    platforms += [f"manylinux2014_{architecture}", f"linux_{architecture}"]
    return ["--python-version", "3.11", "--implementation", "cp", *(f"--platform={tag}" for tag in platforms)]


def cache(folder: str, architecture: str) -> Path:
    """Where this controller keeps the wheels docker/<folder>'s lock pins, for one architecture."""
    return paths.CACHE / "wheelhouse" / architecture / folder


def locked_files(lock: Path) -> dict[str, set[str]]:
    """Map of requirement (`name==version`) to the sha256 of each of its wheels, from a lock file."""
    pins = {}
    for line in lock.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            matched = PIN.match(line)
            if not matched:
                raise StationError(f"{lock}: cannot read {line!r}", "regenerate the lock with write_lock")
            pins[matched[1]] = set(re.findall(r"[0-9a-f]{64}", matched[2]))
    return pins


def covers(lock: Path) -> list[str]:
    """The architectures the lock has a wheel of every requirement for (its `# architectures:` line)."""
    found = COVERS.search(lock.read_text())
    return found[1].split() if found else []


def require_architecture(lock: Path, architecture: str) -> None:
    """Refuse, before any download or build, an architecture the lock has no wheels for."""
    locked = covers(lock)
    if architecture not in locked:
        raise StationError(
            f"{lock.relative_to(paths.ROOT) if lock.is_relative_to(paths.ROOT) else lock} pins wheels for "
            f"{', '.join(locked) or 'no architecture'}, not {architecture}: nothing was downloaded or built",
            f"add {architecture}'s wheels to it (the lock's own header says how), or serve from a host of "
            f"{' or '.join(locked) or 'another architecture'}",
        )


def digests(folder: Path) -> dict[str, Path]:
    """Each wheel in the folder by its sha256. A digest is computed once (a gigabyte of wheels takes seconds) and kept
    in the folder, computed again when the wheel's size or modification time changes."""
    record = folder / DIGESTS
    try:
        known = json.loads(record.read_text())
    except (OSError, ValueError):
        known = {}
    found, current = {}, {}
    for wheel in sorted(folder.glob("*.whl")):
        stat = wheel.stat()
        seen = [stat.st_size, stat.st_mtime_ns]
        entry = known.get(wheel.name, {})
        digest = entry["sha256"] if entry.get("stat") == seen else sha256(wheel)
        current[wheel.name] = {"stat": seen, "sha256": digest}
        found[digest] = wheel
    if current != known:
        partial = record.with_suffix(".partial")
        partial.write_text(json.dumps(current, indent=1))
        partial.replace(record)
    return found


def locked_wheels(lock: Path, folder: Path) -> list[Path]:
    """The wheels in the folder that the lock pins: what a build or a bundle takes from it."""
    if not folder.is_dir():
        return []
    pinned = set().union(*locked_files(lock).values())
    return sorted(wheel for digest, wheel in digests(folder).items() if digest in pinned)


def is_complete(lock: Path, folder: Path) -> bool:
    """True when the folder holds a wheel with a locked hash for every pin."""
    if not folder.is_dir():
        return False
    present = set(digests(folder))
    return all(hashes & present for hashes in locked_files(lock).values())


def download(lock: Path, folder: Path, architecture: str) -> None:
    """Fetch exactly the locked wheels of `architecture` (hash-checked by pip) into folder."""
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--require-hashes"]
    cmd += [*target(architecture), "-r", str(lock), "-d", str(folder)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise StationError(
            f"could not download the {architecture} wheels pinned in {lock}:\n{result.stderr[-2000:]}",
            "check access to PyPI (torch +cpu builds come from https://download.pytorch.org/whl/cpu: "
            "set PIP_EXTRA_INDEX_URL), or copy a wheelhouse built elsewhere into " + str(folder),
        )


def ensure(lock: Path, folder: Path, architecture: str) -> Path:
    """The folder, holding every wheel the lock pins for `architecture` (downloaded when one is missing)."""
    require_architecture(lock, architecture)
    if not is_complete(lock, folder):
        download(lock, folder, architecture)
    return folder


def write_lock(folders: dict[str, Path], lock: Path, header: str) -> None:
    """Record the wheels of each architecture's folder with their hashes (maintainers, after `pip download` with
    `target(architecture)` into one folder per architecture)."""
    hashes: dict[str, set[str]] = {}
    for folder in folders.values():
        for wheel in folder.glob("*.whl"):
            name, version = wheel.name.split("-")[:2]
            hashes.setdefault(f"{name.lower().replace('_', '-')}=={version}", set()).add(sha256(wheel))
    lines = [f"# {line}" for line in header.splitlines()] + [f"# architectures: {' '.join(folders)}"]
    for requirement in sorted(hashes):
        lines.append(" ".join([requirement, *(f"--hash=sha256:{digest}" for digest in sorted(hashes[requirement]))]))
    lock.write_text("\n".join(lines) + "\n")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
