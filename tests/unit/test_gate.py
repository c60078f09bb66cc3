"""The regression gate's thresholds."""

from __future__ import annotations

import pytest

from station.gate import Margins, regressions, unusable_baseline

BASE = {"output_throughput": 1000.0, "p99_ttft_ms": 2000.0}


@pytest.mark.parametrize(
    ("throughput", "ttft", "expected"),
    [
        (1000, 2000, []),
        (951, 2199, []),  # within 5% and 10%
        (940, 2000, ["output throughput fell 6.0% (1,000 → 940 tok/s; margin 5%)"]),
        (1000, 2300, ["TTFT p99 rose 15.0% (2,000 → 2,300 ms; margin 10%)"]),
        (1200, 1000, []),  # better is never a regression
    ],
)
def test_default_margins(throughput: float, ttft: float, expected: list[str]) -> None:
    assert regressions(BASE, {"output_throughput": throughput, "p99_ttft_ms": ttft}, Margins()) == expected


def test_margins_are_configurable() -> None:
    current = {"output_throughput": 940.0, "p99_ttft_ms": 2000.0}
    assert regressions(BASE, current, Margins(throughput_drop_pct=10)) == []
    assert len(regressions(BASE, current, Margins(throughput_drop_pct=1))) == 1


BASELINE = {"run_id": "r1", "kind": "smoke-bench", "failed": 0, "recipe": "cpu-smoke"}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"kind": "agentic"}, "r1 replayed an agentic profile"),
        ({"failed": 3}, "r1 had 3 failed request(s)"),
        ({"recipe": "cpu-ladder-step4"}, "r1 measured recipe cpu-ladder-step4, not cpu-smoke"),
    ],
)
def test_an_invalid_or_mismatched_baseline_is_refused_with_its_reason(change: dict, reason: str) -> None:
    assert reason in unusable_baseline(BASELINE | change, "cpu-smoke")


def test_a_valid_baseline_of_the_same_recipe_is_usable() -> None:
    assert unusable_baseline(BASELINE, "cpu-smoke") is None
