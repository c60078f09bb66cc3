"""The Python code passes ruff's lint rules and formatting (configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from station import paths

RUFF = str(Path(sys.executable).parent / "ruff")


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff(command: list[str]) -> None:
    result = subprocess.run([RUFF, *command, "."], cwd=paths.ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
