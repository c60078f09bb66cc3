"""Evidence from the simulated host's stored runs: reports and comparisons, the cost of a run.

After the ladder (test_7, on the same host) in a whole run, its runs are the
ones reported; on its own, the module benchmarks cpu-smoke first. Accuracy
drift between the ladder's steps is measured on the local host
(tests/integration/local/test_4_accuracy.py).
"""

from __future__ import annotations

import pytest

from station import paths
from station.bench import runs
from tests.integration.conftest import invoke, succeeded

HOST = "sim"


@pytest.fixture(scope="module")
def two_runs(provisioned) -> list[str]:
    """The two newest stored runs: the ladder's steps when the whole suite runs, benchmarks of cpu-smoke made
    here when this module runs on its own."""
    while len(runs.select(last=2)) < 2:
        succeeded(invoke("deploy", "--host", HOST))
        succeeded(invoke("smoke-bench", "--host", HOST))
    return [entry.run_id for entry in runs.select(last=2)]


def test_report_writes_markdown_and_charts(two_runs) -> None:
    run = succeeded(invoke("report", "--run", ",".join(two_runs)))
    path = paths.ROOT / run.output.split("Report of 2 run(s): ")[1].split()[0]
    text = path.read_text()
    assert all(run_id in text for run_id in two_runs)
    assert (path.parent / "throughput.png").is_file() and (path.parent / "latency.png").is_file()
    assert "no GPU telemetry" in text


def test_compare_prints_and_writes_ratios(two_runs) -> None:
    a, b = two_runs
    run = succeeded(invoke("compare", a, b))
    assert "Output tok/s" in run.output and "B / A" in run.output
    written = paths.ROOT / run.output.split("Written to ")[1].split()[0]
    assert "| Output tok/s |" in written.read_text()


def test_cost_of_a_measured_run(two_runs) -> None:
    (entry,) = runs.select(two_runs[-1:])
    run = succeeded(invoke("cost", "--run", entry.run_id, "--gpu-hour-price", "4", "--api-price", "1"))
    throughput = entry.output_throughput
    expected = 4 / (throughput * 3600 / 1e6)
    assert f"USD {expected:,.4f} per M output tokens" in run.output


def test_cost_reproduces_the_published_claim() -> None:
    run = succeeded(invoke("cost", "--published"))
    assert "66.5% cheaper than the API" in run.output and "33.5%" in run.output


def test_cost_input_errors_are_named() -> None:
    run = invoke("cost", "--tokens-per-s", "1000", "--api-price", "1", "--capex", "50000")
    assert run.returncode == 1 and "Traceback" not in run.output
    assert "missing: lifetime_years, power_kw, power_price_kwh" in run.output
