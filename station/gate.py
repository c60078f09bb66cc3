"""The regression gate: a run against a baseline run, within margins, or the reasons it is not."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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


def unusable_baseline(baseline: dict[str, Any], recipe_name: str) -> str | None:
    """Why a stored run cannot be the baseline of a random-profile run of this recipe; None when it can."""
    if baseline["kind"] == "agentic":
        return f"{baseline['run_id']} replayed an agentic profile, not the recipe's random one"
    if baseline["failed"]:
        return f"{baseline['run_id']} had {baseline['failed']} failed request(s): it is not a valid measurement"
    if baseline["recipe"] != recipe_name:
        return f"{baseline['run_id']} measured recipe {baseline['recipe']}, not {recipe_name}"
    return None
