"""The regression gate's thresholds."""

from __future__ import annotations

import pytest

from station.gate import Margins, regressions

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
