"""Module payloads kept from one ansible-playbook run to the next.

Ansible builds a module's payload (AnsiballZ: the module and the module_utils it imports, found by parsing their
source) once per run, in a cache under the run's temporary folder, which goes when the run ends. station runs
hundreds of short playbooks, and building payloads was an eighth of the CPU of a deploy that changes nothing. This
points that cache at a folder kept in STATION_PAYLOAD_DIR instead: one folder per set of what payloads are built
from (ansible-core, the collections, the library's modules, this Python, station_bytecode), so a changed module is
never sent from a payload built before the change. Ansible's own lock and rename keep concurrent runs apart.

An aggregate callback only for where Ansible loads it: in ansible-playbook's main process, before it forks the
workers that build payloads in the run's temporary folder.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import sys
import time
from pathlib import Path

from ansible.utils.collection_loader import AnsibleCollectionConfig

from ansible import constants as C
from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: station_payloads
type: aggregate
short_description: Module payloads kept from one run to the next
description:
  - Points Ansible's per-run cache of module payloads (AnsiballZ) at a folder kept between runs, one per set of the
    sources payloads are built from.
requirements:
  - enable in callbacks_enabled, with STATION_PAYLOAD_DIR set
"""

CACHE_ENV = "STATION_PAYLOAD_DIR"
UNUSED_FOR_S = 30 * 24 * 3600  # a folder no run has used for this long is removed
BYTECODE_PLUGIN = Path(__file__).with_name("station_bytecode.py")


def _versions() -> list[str]:
    found = []
    for distribution in ("ansible-core", "ansible"):
        try:
            found.append(f"{distribution}=={importlib.metadata.version(distribution)}")
        except importlib.metadata.PackageNotFoundError:
            found.append(f"{distribution} absent")
    return found


def _module_folders() -> list[Path]:
    """Where Ansible finds modules and module_utils: the configured paths, each role's, and each playbook's own."""
    configured = [*C.DEFAULT_MODULE_PATH, *C.DEFAULT_MODULE_UTILS_PATH]
    roles = [role for path in C.DEFAULT_ROLES_PATH for role in Path(path).glob("*")]
    playbooks = [Path(arg).resolve().parent for arg in sys.argv[1:] if arg.endswith((".yml", ".yaml"))]
    beside = [folder / name for folder in roles + playbooks for name in ("library", "module_utils")]
    return [folder for folder in [*map(Path, configured), *beside] if folder.is_dir()]


def _sources() -> list[Path]:
    """The files a payload is built from that can change under the same ansible-core: the modules and module_utils
    outside it, each collection (by its manifest), and the plugin that adds bytecode to payloads."""
    collections = [Path(p) / "ansible_collections" for p in AnsibleCollectionConfig.collection_paths]
    return sorted(
        [path for folder in _module_folders() for path in folder.rglob("*.py")]
        + [path for folder in collections if folder.is_dir() for path in folder.glob("*/*/MANIFEST.json")]
        + [BYTECODE_PLUGIN]
    )


def key() -> str:
    """A digest of everything payloads are built from: versions, and each source file's path, size and mtime."""
    digest = hashlib.sha256("\0".join([sys.version, *_versions()]).encode())
    for path in _sources():
        stat = path.stat()
        digest.update(f"\0{path}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def keep_payloads(cache: Path, run_tmp: Path) -> Path:
    """Link the run's payload cache (`run_tmp`/ansiballz_cache) to `cache`'s folder for this key; drop the folders
    of sources no run has used for a month."""
    folder = cache / key()
    folder.mkdir(parents=True, exist_ok=True)
    os.utime(folder)  # used now: the age below is the time since a run last used it
    for other in cache.iterdir():
        if other != folder and time.time() - other.stat().st_mtime > UNUSED_FOR_S:
            shutil.rmtree(other, ignore_errors=True)  # another run may be removing it too
    link = run_tmp / "ansiballz_cache"
    if not link.exists():
        link.symlink_to(folder, target_is_directory=True)
    return folder


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "station_payloads"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        cache = os.environ.get(CACHE_ENV)
        if cache:
            keep_payloads(Path(cache), Path(C.DEFAULT_LOCAL_TMP))
