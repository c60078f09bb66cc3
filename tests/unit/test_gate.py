"""The regression gate's thresholds."""

from __future__ import annotations

import pytest

from station.bench.gate import Margins, margins, regressions, require_no_regression, unlike, unusable_baseline
from station.bench.records import IndexEntry
from station.errors import StationError
from station.recipes import recipe
from tests.conftest import indexed_run

SMOKE = recipe.load("cpu-smoke")
BASELINE = indexed_run(profile=SMOKE.bench.model_dump())


def measured(**changed) -> IndexEntry:
    return BASELINE.model_copy(update=changed)


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
    assert regressions(BASELINE, measured(output_throughput=throughput, p99_ttft_ms=ttft), Margins()) == expected


def test_margins_are_configurable() -> None:
    current = measured(output_throughput=940.0)
    assert regressions(BASELINE, current, Margins(throughput_drop_pct=10)) == []
    assert len(regressions(BASELINE, current, Margins(throughput_drop_pct=1))) == 1


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"kind": "agentic"}, "r1 replayed an agentic profile"),
        ({"failed": 3}, "r1 was not a valid measurement: 3 failed request(s)"),
        ({"recipe": "cpu-ladder-step4"}, "r1 measured recipe cpu-ladder-step4, not cpu-smoke"),
        ({"problems": ["60 of 64 completed"]}, "r1 was not a valid measurement: 60 of 64 completed"),
        ({"client_bound": True}, "r1 was paced by its client"),
        (
            {"profile": SMOKE.bench.model_dump() | {"concurrency": 1}},
            f"r1 measured another profile ({SMOKE.bench.input_len} in / {SMOKE.bench.output_len} out, 1 concurrent",
        ),
    ],
)
def test_an_invalid_or_mismatched_baseline_is_refused_with_its_reason(change: dict, reason: str) -> None:
    assert reason in unusable_baseline(measured(**change), SMOKE)


def test_a_valid_baseline_of_the_same_recipe_is_usable() -> None:
    assert unusable_baseline(BASELINE, SMOKE) is None
    assert unusable_baseline(measured(profile=None), SMOKE) is None  # indexed before profiles were


def test_a_run_on_another_gpu_is_not_judged_against_the_baseline() -> None:
    assert unlike(BASELINE, measured(run_id="r2")) is None
    assert unlike(BASELINE, measured(gpu="1x NVIDIA B200")) == "r1 ran on 1x NVIDIA H200, this run on 1x NVIDIA B200"


XEON = "Intel(R) Xeon(R) Processor, 2 cores, avx2 avx512f avx512_bf16 amx_tile amx_bf16"
EPYC = "AMD EPYC 9454P 48-Core Processor, 2 cores, avx2 avx512f avx512_bf16"


@pytest.mark.parametrize(
    ("baseline_cpu", "current_cpu", "said"),
    [
        (EPYC, XEON, f"r1 ran on the CPU {EPYC}, this run on {XEON}"),
        ("", XEON, f"r1 ran on the CPU it did not record, this run on {XEON}"),
    ],
)
def test_a_cpu_run_on_another_cpu_is_not_judged_against_the_baseline(baseline_cpu, current_cpu, said) -> None:
    baseline = measured(gpu="none", cpu=baseline_cpu)
    current = measured(run_id="r2", gpu="none", cpu=current_cpu, output_throughput=500.0)
    assert unlike(baseline, current) == said
    with pytest.raises(StationError, match="nothing was judged a regression") as refused:
        require_no_regression(baseline, current, Margins())
    assert "regression against" not in refused.value.problem


def test_a_cpu_run_on_the_same_cpu_is_judged() -> None:
    baseline = measured(gpu="none", cpu=XEON)
    assert unlike(baseline, measured(run_id="r2", gpu="none", cpu=XEON)) is None
    with pytest.raises(StationError, match="regression against r1"):
        require_no_regression(baseline, measured(gpu="none", cpu=XEON, output_throughput=500.0), Margins())


def test_the_command_line_s_margins_win_over_the_configuration_s() -> None:
    assert margins({}, None, None) == Margins()
    assert margins({"throughput_drop_pct": 2.0}, None, "20") == Margins(throughput_drop_pct=2.0, ttft_p99_rise_pct=20)
    assert margins({"throughput_drop_pct": 2.0}, "7", None).throughput_drop_pct == 7


@pytest.mark.parametrize(
    ("current", "refusal"),
    [
        (measured(gpu="1x NVIDIA B200"), "not comparable with r1: r1 ran on 1x NVIDIA H200"),
        (measured(output_throughput=900.0), "regression against r1: output throughput fell 10.0%"),
    ],
)
def test_a_run_unlike_or_worse_than_its_baseline_is_refused(current: IndexEntry, refusal: str) -> None:
    with pytest.raises(StationError, match=refusal):
        require_no_regression(BASELINE, current, Margins())
    require_no_regression(BASELINE, measured(run_id="r2"), Margins())  # the same figures pass
