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
