"""Where a number came from: the bundle, the controller, the recipe, the host and its engine."""

from __future__ import annotations

import platform
import subprocess
from datetime import UTC, datetime
from importlib.metadata import version
from typing import Any

from station import paths
from station.bench.records import HostFacts
from station.recipes.recipe import Recipe


def bundle_commit() -> dict[str, Any]:
    """The station checkout's commit, and whether it had uncommitted changes."""

    def git(*args: str) -> str | None:
        result = subprocess.run(["git", *args], cwd=paths.ROOT, capture_output=True, text=True, check=False)
        return result.stdout.strip() if result.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit or "unknown", "dirty": bool(status) if status is not None else None}


def controller() -> dict[str, Any]:
    return {
        "hostname": platform.node(),
        "python": platform.python_version(),
        "ansible_core": version("ansible-core"),
    }


def record(recipe: Recipe, host: str, facts: HostFacts) -> dict[str, Any]:
    """Provenance of one run: `facts` is what the bench playbook gathered on the host."""
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "bundle": bundle_commit(),
        "controller": controller(),
        "inventory_host": host,
        "vllm_version": recipe.engine.vllm_version,
        "recipe": recipe.model_dump(mode="json"),
        **facts.model_dump(mode="json"),
    }
