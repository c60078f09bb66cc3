"""station/ is one package per capability, each with its map, and a package imports only those below it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from station import paths

STATION = paths.ROOT / "station"
# Lowest first: a package may import the ones before it (and station's errors and paths), never one after it.
LAYERS = ["generators", "recipes", "deploy", "bench", "reports", "tune", "fleet"]


def imported_packages(module: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("station."):
            found.add(node.module.split(".")[1])
    return found & set(LAYERS)


@pytest.mark.parametrize("package", LAYERS)
def test_a_package_imports_only_the_layers_below_it(package: str) -> None:
    above = set(LAYERS[LAYERS.index(package) + 1 :])
    wrong = {
        f"{module.relative_to(paths.ROOT)} imports station.{target}"
        for module in sorted((STATION / package).glob("*.py"))
        for target in imported_packages(module) & above
    }
    assert not wrong, "\n".join(sorted(wrong))


def test_every_package_is_a_layer_with_a_map_of_its_modules() -> None:
    packages = sorted(p.name for p in STATION.iterdir() if (p / "__init__.py").is_file())
    assert packages == sorted(LAYERS)
    for package in packages:
        described = ast.get_docstring(ast.parse((STATION / package / "__init__.py").read_text())) or ""
        modules = [m.name for m in (STATION / package).glob("*.py") if m.name != "__init__.py"]
        assert [m for m in modules if m not in described] == [], f"station/{package}/__init__.py maps its modules"


def test_only_the_shared_basics_sit_at_the_top() -> None:
    assert sorted(m.name for m in STATION.glob("*.py")) == ["__init__.py", "errors.py", "paths.py"]
