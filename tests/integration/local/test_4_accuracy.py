"""Accuracy drift between two steps of the CPU ladder on the local host (`invoke accuracy`): each step deployed in
place and probed with fixed prompts at temperature 0. Before `another_key` and `down`: the ladder's step is left
serving, and the next module's deploy replaces the deployment whole."""

from __future__ import annotations

import json
import re
from pathlib import Path

from station.bench import accuracy
from tests.integration.conftest import invoke, succeeded

HOST = "local"


def drift_of(run_output: str) -> dict:
    folder = re.search(r"(/\S+/accuracy/[^\s│]+)", run_output)
    assert folder, run_output
    return json.loads((Path(folder.group(1)) / "drift.json").read_text())


def test_identical_configurations_match_exactly(first_deploy) -> None:
    run = succeeded(invoke("accuracy", "--host", HOST, "--recipe", "cpu-ladder", "--steps", "4,4"))
    assert "Step 4 is deployed already: probed again as it runs." in run.output  # one deploy, two probes
    drift = drift_of(run.output)["drift"]
    print(drift)
    assert drift["exact_match_rate"] == 1.0 and drift["mean_abs_logprob_diff"] == 0.0
    assert drift["prompts"] == len(accuracy.PROMPTS)


def test_bfloat16_against_float32_drifts_and_the_figures_agree(first_deploy) -> None:
    # step 4 (float32, every switch) as the reference: in a whole run the test above left it deployed, so only step 0
    # is started
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
