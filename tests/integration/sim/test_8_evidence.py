"""Evidence on the CPU engine of the simulated host: reports and comparisons from stored runs, the cost of a run,
accuracy drift.

After the ladder (test_6, on the same host) in a whole run, its runs are the
ones reported and its last step, still deployed, is probed by the
identical-configuration check and is the drift check's reference, without a
restart; on its own, the module benchmarks cpu-smoke first.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from station import paths
from station.bench import accuracy, runs
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


def drift_of(run_output: str) -> dict:
    folder = re.search(r"(/\S+/accuracy/[^\s│]+)", run_output)
    assert folder, run_output
    return json.loads((Path(folder.group(1)) / "drift.json").read_text())


def test_identical_configurations_match_exactly(provisioned) -> None:
    run = succeeded(invoke("accuracy", "--host", HOST, "--recipe", "cpu-ladder", "--steps", "4,4"))
    assert "Step 4 is deployed already: probed again as it runs." in run.output  # one deploy, two probes
    drift = drift_of(run.output)["drift"]
    print(drift)
    assert drift["exact_match_rate"] == 1.0 and drift["mean_abs_logprob_diff"] == 0.0
    assert drift["prompts"] == len(accuracy.PROMPTS)


def test_bfloat16_against_float32_drifts_and_the_figures_agree(provisioned) -> None:
    # step 4 (float32, every switch) as the reference: the ladder left it deployed, so only step 0 is started
    run = invoke("accuracy", "--host", HOST, "--recipe", "cpu-ladder", "--steps", "4,0")
    record = drift_of(run.output)
    drift, problems = record["drift"], record["problems"]
    print(drift)
    assert drift["mean_abs_logprob_diff"] > 0  # the two configurations really differ numerically
    assert drift["diverged"] == round((1 - drift["exact_match_rate"]) * drift["prompts"])
    if drift["diverged"]:
        assert 0 <= drift["mean_first_divergence"] < accuracy.MAX_TOKENS
    assert (run.returncode == 1) == bool(problems), run.output
    if problems:
        assert "accuracy drift beyond the thresholds" in run.output
