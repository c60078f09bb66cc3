"""One trial: a configuration started as a held-back engine beside the live one, the profile replayed against it.

The live engine keeps serving, untouched: the candidate runs in the
candidate's container (on CPU hosts, on cores of its own), the router never
sends to it, and the replay talks to it directly. The next configuration
replaces it there; the last is removed when the tune ends, however it ends
(station.deploy.candidate.held_back).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.console import Console

from station.bench import agentic, measure
from station.bench.agentic import AgenticMetrics
from station.deploy import keys
from station.errors import StationError
from station.recipes.profiles import AgenticProfile
from station.recipes.recipe import Recipe


class Measurement(BaseModel):
    """What one configuration did under the profile, or why it did not run."""

    recipe: str
    values: dict[str, Any]
    metrics: AgenticMetrics | None = None
    problems: list[str] = []  # why a replay that ran is not a valid measurement
    error: str | None = None  # why the configuration did not serve: vLLM refused it, or it failed to start
    seconds: float

    @property
    def valid(self) -> bool:
        return self.metrics is not None and not self.problems

    def figures(self) -> dict[str, Any]:
        return self.metrics.model_dump() if self.metrics else {}


def measure_held_back(
    host: str,
    recipe: Recipe,
    values: dict[str, Any],
    profile: AgenticProfile,
    out: Path,
    console: Console,
    hold: Callable[[Recipe], None],
) -> Measurement:
    """`recipe` held back on the host (`hold` starts it there) and measured with `profile`; its failure to serve is
    recorded, not raised."""
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    keys.api_key(host)  # no key, no deployment: refused before any trial starts
    try:
        hold(recipe)
        metrics = measure.replay(host, profile, recipe, out, console)
    except StationError as refused:
        (out / "error.txt").write_text(f"{refused}\n")
        return Measurement(
            recipe=recipe.name, values=values, error=_headline(refused.problem), seconds=time.monotonic() - started
        )
    return Measurement(
        recipe=recipe.name,
        values=values,
        metrics=metrics,
        problems=agentic.problems(profile, metrics),
        seconds=time.monotonic() - started,
    )


def _headline(problem: str) -> str:
    """What an engine's failure says went wrong, without the log lines that follow (they stay in error.txt)."""
    lines = [line.strip() for line in problem.splitlines()[1:] if line.strip()]
    said = []
    for line in lines:
        if line.startswith(("Last ", "The live engine", "Fix the recipe")):
            break
        said.append(line)
    return " ".join(said or problem.splitlines()[:1])[:400]
