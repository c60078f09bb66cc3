"""Shared fixtures: recipes written to temporary files, the repository's paths."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from station import paths

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def cpu_smoke_data() -> dict[str, Any]:
    """The shipped cpu-smoke recipe as plain data, to mutate."""
    return yaml.safe_load((paths.RECIPES / "cpu-smoke.yml").read_text())


@pytest.fixture
def write_recipe(tmp_path: Path) -> Callable[[dict[str, Any]], Path]:
    def write(data: dict[str, Any]) -> Path:
        path = tmp_path / "recipe.yml"
        path.write_text(yaml.safe_dump(copy.deepcopy(data), sort_keys=False))
        return path

    return write
