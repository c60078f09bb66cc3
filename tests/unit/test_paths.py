"""The suite works in a sandbox: the user's results/ and .station/ are never its folders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from station import paths
from tests.conftest import SANDBOX


@pytest.mark.parametrize("folder", [paths.RESULTS, paths.STATE, paths.SECRETS, paths.LOGS, paths.CACHE])
def test_the_suite_writes_only_into_its_sandbox(folder: Path) -> None:
    assert SANDBOX in folder.parents
    assert paths.ROOT not in folder.parents


def test_the_environment_moves_results_and_state(tmp_path: Path) -> None:
    code = "from station import paths; print(paths.RESULTS); print(paths.STATE)"
    env = os.environ | {"STATION_RESULTS_DIR": str(tmp_path / "r"), "STATION_STATE_DIR": str(tmp_path / "s")}
    shown = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert shown.stdout.split() == [str(tmp_path / "r"), str(tmp_path / "s")]


def test_without_the_environment_they_are_the_checkouts_folders() -> None:
    code = "from station import paths; print(paths.RESULTS); print(paths.STATE)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("STATION_")}
    shown = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert shown.stdout.split() == [str(paths.ROOT / "results"), str(paths.ROOT / ".station")]
