"""The regression gate: a run against a baseline run, within margins, or the reasons it is not."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from station import runs
from station.recipe import Recipe


@dataclass(frozen=True)
class Margins:
    """How much worse than the baseline a run may be, in percent."""

    throughput_drop_pct: float = 5.0
    ttft_p99_rise_pct: float = 10.0


def change_pct(baseline: float, current: float) -> float:
    return (current - baseline) / baseline * 100


def regressions(baseline: dict[str, Any], current: dict[str, Any], margins: Margins) -> list[str]:
    """What got worse beyond its margin, with by how much; empty when the run passes."""
    found = []
    throughput = change_pct(baseline["output_throughput"], current["output_throughput"])
    if -throughput > margins.throughput_drop_pct:
        found.append(
            f"output throughput fell {-throughput:.1f}% ({baseline['output_throughput']:,.0f} → "
            f"{current['output_throughput']:,.0f} tok/s; margin {margins.throughput_drop_pct:g}%)"
        )
    ttft = change_pct(baseline["p99_ttft_ms"], current["p99_ttft_ms"])
    if ttft > margins.ttft_p99_rise_pct:
        found.append(
            f"TTFT p99 rose {ttft:.1f}% ({baseline['p99_ttft_ms']:,.0f} → {current['p99_ttft_ms']:,.0f} ms; "
            f"margin {margins.ttft_p99_rise_pct:g}%)"
        )
    return found


def unusable_baseline(baseline: dict[str, Any], recipe: Recipe) -> str | None:
    """Why a stored run cannot be the baseline of a random-profile run of this recipe; None when it can."""
    if baseline["kind"] == "agentic":
        return f"{baseline['run_id']} replayed an agentic profile, not the recipe's random one"
    if baseline["recipe"] != recipe.name:
        return f"{baseline['run_id']} measured recipe {baseline['recipe']}, not {recipe.name}"
    measured = baseline.get("profile")
    if measured is not None and measured != recipe.bench.model_dump():
        return f"{baseline['run_id']} measured another profile ({_profile(measured)}, not {_profile(recipe.bench)})"
    reason = runs.invalid(baseline)
    return f"{baseline['run_id']} was {reason}" if reason else None


def unlike(baseline: dict[str, Any], current: dict[str, Any]) -> str | None:
    """Why a finished run cannot be judged against the baseline: another GPU measures another thing."""
    if baseline["gpu"] != current["gpu"]:
        return f"{baseline['run_id']} ran on {baseline['gpu']}, this run on {current['gpu']}"
    return None


def _profile(profile: Any) -> str:
    shape = profile if isinstance(profile, dict) else profile.model_dump()
    return f"{shape['input_len']} in / {shape['output_len']} out, {shape['concurrency']} concurrent"
