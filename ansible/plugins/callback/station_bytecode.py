"""Bytecode beside the source in every module payload Ansible sends to a host.

Ansible sends a module and the module_utils it imports as Python source in a zip (AnsiballZ), and the host's Python
compiles all of it again on every task: zipimport never writes bytecode. Importing ansible.module_utils.basic from such
a zip took 0.18-0.23 s of CPU here, 0.08 s with the bytecode in the zip; a deploy runs about 50 modules, a test run
4,000. A host whose Python is another version ignores the bytecode (zipimport checks its magic number, and the source
hash it carries) and compiles the source as before.

An aggregate callback only for where Ansible loads it: in ansible-playbook's main process, before the worker processes
that build the payloads are forked from it. The compiled files are kept in STATION_BYTECODE_DIR (station points it at
its cache), named by a hash of what was compiled, so each source is compiled once per controller.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import marshal
import os
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from ansible.executor import module_common

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: station_bytecode
type: aggregate
short_description: Bytecode beside the source in module payloads
description:
  - Adds each Python file's bytecode (a checked-hash .pyc, PEP 552) to the zip Ansible sends a host for a module.
  - The host's Python imports it instead of compiling the source on every task; another Python version ignores it.
requirements:
  - enable in callbacks_enabled
"""

CACHE_ENV = "STATION_BYTECODE_DIR"
CHECKED_HASH = (0b11).to_bytes(4, "little")  # PEP 552 flags: hash-based, checked against the source beside it


def pyc(filename: str, source: bytes) -> bytes:
    """A checked-hash .pyc of `source`, whose tracebacks name `filename` (its path in the zip)."""
    code = compile(source, filename, "exec", dont_inherit=True)
    return importlib.util.MAGIC_NUMBER + CHECKED_HASH + importlib.util.source_hash(source) + marshal.dumps(code)


def cached_pyc(filename: str, source: bytes, cache: Path | None) -> bytes:
    """pyc(), read from `cache` where it was compiled before, written there where not."""
    if cache is None:
        return pyc(filename, source)
    key = hashlib.sha256(filename.encode() + b"\0" + source).hexdigest()
    path = cache / sys.implementation.cache_tag / f"{key}.pyc"
    if path.exists():
        return path.read_bytes()
    compiled = pyc(filename, source)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as partial:
        partial.write(compiled)
    os.replace(partial.name, path)  # two workers compiling the same file both write the same bytes
    return compiled


class _WithBytecode:
    """A payload's zip file that writes each .py it is given with its .pyc beside it (where zipimport looks)."""

    def __init__(self, zf: zipfile.ZipFile, cache: Path | None) -> None:
        self._zf, self._cache = zf, cache

    def writestr(self, zinfo: zipfile.ZipInfo, data: bytes | str, *args: Any, **kwargs: Any) -> None:
        self._zf.writestr(zinfo, data, *args, **kwargs)
        if not zinfo.filename.endswith(".py"):
            return
        source = data.encode() if isinstance(data, str) else bytes(data)
        try:
            bytecode = cached_pyc(zinfo.filename, source, self._cache)
        except (SyntaxError, ValueError):  # not this Python's syntax: the host's may read it, from source as before
            return
        compiled = zipfile.ZipInfo(zinfo.filename + "c", date_time=zinfo.date_time)
        compiled.compress_type = zinfo.compress_type
        self._zf.writestr(compiled, bytecode)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._zf, name)


def _adding_bytecode(build: Any) -> Any:
    """`build` (a function of module_common that writes files into a payload's zip, given as `zf`), writing each
    Python file's bytecode too."""
    signature = inspect.signature(build)

    @functools.wraps(build)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        cache = os.environ.get(CACHE_ENV)
        bound.arguments["zf"] = _WithBytecode(bound.arguments["zf"], Path(cache) if cache else None)
        return build(*bound.args, **bound.kwargs)

    wrapped.station_bytecode = True
    return wrapped


BUILDERS = ("recursive_finder", "_add_module_to_zip")  # ansible-core 2.19's, which write a payload's Python files


def install() -> None:
    """Wrap the two functions that write a payload's Python files: the module_utils, and the module. An ansible-core
    that builds payloads otherwise is left as it is: its modules run from source (tests/ansible notices)."""
    builds = [getattr(module_common, name, None) for name in BUILDERS]
    if not all(build and "zf" in inspect.signature(build).parameters for build in builds):
        return
    for name, build in zip(BUILDERS, builds, strict=True):
        if not getattr(build, "station_bytecode", False):
            setattr(module_common, name, _adding_bytecode(build))


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "station_bytecode"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        install()
