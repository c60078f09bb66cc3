"""`invoke tune` on the simulated host's CPU engine, for agentic-cpu's eight sessions: a small search on an engine held
back beside the live one, the interleaved re-measurement, the report; the live engine keeps serving, untouched,
throughout. Every part of it reaches the host as a remote one is reached: Ansible over SSH, and this machine's clients
through SSH forwards.

The host runs a configuration planted to be bad (cpu-smoke at its worst on every flag of the space: one sequence at a
time, 64-token prefill chunks, no prefix cache; swapped in first) and every configuration of the space serves eight
sessions at once in chunks of 1k tokens or more: the tuner must find one at least 1.5 times better,
measured again interleaved against the planted one, and write it as a recipe, or the test fails. The trials replay the
profile itself, not the traffic the planted engine served: captured there, it replayed as 2 sessions (what serving one
at a time let into the engine at once), where one sequence or 32 differ by 1.25x only. Capturing traffic is tested on
the local host (tests/integration/local/test_3_traffic.py), turning a capture into sessions in tests/unit.
"""

from __future__ import annotations

import pytest
import yaml
from rich.console import Console

from station import paths
from station.deploy import keys, tunnel
from station.recipes import profiles, recipe
from station.tune import search
from tests.integration.conftest import Invocation, StreamingClients, invoke, succeeded
from tests.integration.sim.conftest import fleet_engine_url, sim_container_id, sim_router_workers

HOST = "sim"
TRIALS = 2  # distinct configurations: with one A B round, four engine starts (six took 13 of CI's minutes)
AB_ROUNDS = 1  # the verdict over more rounds is test_tune's
PLANTED = str(paths.ROOT / "tests" / "fixtures" / "recipes" / "cpu-smoke-worst.yml")
BETTER_BY = 1.5  # what the best trial must beat the planted configuration by, measured again


@pytest.fixture(scope="module")
def planted_on_sim(deployed_on_sim) -> None:
    """The planted configuration serving on sim, swapped in place, with no agent-check."""
    succeeded(invoke("deploy", "--host", HOST, "--recipe", PLANTED, "--in-place", "--no-agent-check"))


@pytest.fixture(scope="module")
def tuned(planted_on_sim, sim_engine, smoke) -> tuple[Invocation, search.TuneRun, StreamingClients, str]:
    """A tune from the planted configuration while a client chats with the live engine through sim's router, slowly
    (it shares the host), from this machine through an SSH forward."""
    live = sim_container_id(sim_engine)
    searching = ["--recipe", PLANTED, "--space", "cpu-agentic", "--profile", "agentic-cpu"]
    with (
        tunnel.urls(HOST, Console(quiet=True)) as found,
        StreamingClients(
            keys.api_key(HOST), smoke.model.served_name, found[tunnel.API], threads=1, pause_s=2
        ) as clients,
    ):
        run = succeeded(
            invoke(
                "tune", "--host", HOST, *searching, "--trials", str(TRIALS), "--ab-rounds", str(AB_ROUNDS), "--fresh"
            )
        )
    (state,) = [
        search.TuneRun.model_validate_json(path.read_text())
        for path in sorted(search.TUNES.glob(f"*-{HOST}-cpu-smoke-worst-cpu-agentic*/tune.json"))[-1:]
    ]
    print(f"\n{run.output[run.output.index('Tune ') :]}")
    print(
        f"during the tune ({run.seconds:.0f} s): {clients.served} chats served by the live engine, "
        f"{len(clients.failures)} failed"
    )
    return run, state, clients, live


def test_the_search_runs_every_trial_and_writes_the_report_and_chart(tuned) -> None:
    run, state, _, _ = tuned
    assert state.finished and f"Trial {TRIALS} of {TRIALS}" in run.output
    found = search.study(state)
    assert len(search.distinct(found)) == TRIALS  # distinct configurations: a repeat is not measured again
    report = (state.folder / "report.md").read_text()
    assert "| Rank | Trial | Flags |" in report and (state.folder / "pareto.png").stat().st_size > 10_000


def test_the_trials_replay_the_profile_s_eight_sessions(tuned) -> None:
    _, state, _, _ = tuned
    assert state.profile == profiles.load("agentic-cpu") and state.profile.sessions == 8
    assert "agentic-cpu" in (state.folder / "report.md").read_text()


def test_the_best_trial_and_the_running_recipe_are_measured_again_interleaved(tuned) -> None:
    _, state, _, _ = tuned
    assert state.verdict is not None, "no trial met the constraints on the CPU engine"
    assert len(state.verdict.rounds) == AB_ROUNDS
    assert all(a.valid and b.valid for a, b in state.verdict.rounds)
    assert state.verdict.said in (state.folder / "report.md").read_text()


def test_the_tuner_finds_a_configuration_far_better_than_the_planted_one(tuned) -> None:
    _, state, _, _ = tuned
    verdict = state.verdict
    print(f"the best trial against the planted configuration, measured again: {verdict.said}")
    assert verdict.beats and verdict.b_within_constraints, verdict.said
    assert verdict.b_mean >= BETTER_BY * verdict.a_mean, verdict.said


def test_the_winner_is_a_recipe_extending_the_running_one(tuned) -> None:
    _, state, _, _ = tuned
    assert state.winner, state.verdict.said
    winner = recipe.load(str(search.TUNES.parent / state.winner))
    assert yaml.safe_load((search.TUNES.parent / state.winner).read_text())["extends"] == PLANTED
    assert winner.tuned["tune"] == state.tune_id
    assert winner.engine.args["max-num-seqs"] > 1 and winner.engine.args["max-num-batched-tokens"] >= 1024


def test_the_live_engine_kept_serving_untouched(tuned, sim_engine) -> None:
    _, _, clients, live = tuned
    assert clients.failures == [] and clients.served > 0
    assert sim_container_id(sim_engine) == live
    assert sorted(sim_router_workers()) == sorted([f"http://{sim_engine}:8000", fleet_engine_url("sim2")])
    assert sim_container_id(f"{sim_engine}-candidate") == ""


def test_a_tune_from_a_recipe_the_host_does_not_run_is_refused_before_any_trial(planted_on_sim) -> None:
    run = invoke("tune", "--host", HOST, "--recipe", "cpu-ladder", "--space", "cpu-agentic", "--profile", "agentic-cpu")
    assert run.returncode == 1, run.output
    assert f"the live engine on {HOST} runs recipe cpu-smoke-worst" in run.output and "Trial 1" not in run.output
