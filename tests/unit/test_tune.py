"""invoke tune without a host: search spaces, constraints, the study's bookkeeping (resume, repeats), the verdict.

The search loop is driven here by `throughput_formula_standing_in_for_an_engine`: a
formula of the flags, not an engine, so that the bookkeeping around the real
measurement (tests/integration/local/test_3_tune.py runs it on the CPU engine) can be
checked in milliseconds and deterministically.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from rich.console import Console

from station import paths
from station.bench.agentic import AgenticMetrics
from station.errors import StationError
from station.recipes import recipe
from station.recipes.profiles import load as load_profile
from station.tune import report, search, space
from station.tune.run import write_winner
from station.tune.trials import Measurement

QUIET = Console(quiet=True)


def metrics(throughput: float, ttft: float = 100.0, failed: int = 0) -> AgenticMetrics:
    return AgenticMetrics(
        p99_tpot_ms=ttft / 7,
        sessions=8,
        sessions_completed=8,
        sessions_failed=0,
        requests=24,
        failed=failed,
        duration_s=10,
        output_throughput=throughput,
        per_session_tok_s_p10=throughput / 10,
        per_session_tok_s_p50=throughput / 8,
        turn_latency_p50_ms=200,
        turn_latency_p99_ms=400,
        p99_ttft_ms=ttft,
        ttft_p99_by_turn_ms=[ttft],
        achieved_concurrency=7,
        expected_concurrency=7,
        client_bound=False,
        prefix_cache_hit_rate=0.5,
        engine_generation_tokens=768,
    )


def write_space(folder: Path, **changes: Any) -> Path:
    data = {
        "name": "small",
        "description": "two flags",
        "flags": {"max-num-seqs": {"choices": [8, 32, 256]}, "enable-prefix-caching": {"choices": [True, False]}},
        "constraints": {"p99_ttft_ms": {"at_most": 1000}},
    } | changes
    path = folder / "space.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_every_shipped_space_loads() -> None:
    for name in space.available():
        loaded = space.load(name)
        assert loaded.flags and loaded.direction in ("maximize", "minimize")


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        ({"port": {"choices": [1]}}, "flag 'port' is set by station"),
        ({"Max_Seqs": {"choices": [1]}}, "spell it as in a recipe's engine.args"),
        ({"max-num-seqs": {"low": 64, "high": 8}}, "low (64) must be below high (8)"),
        ({"max-num-seqs": {"choices": []}}, "at least 1 item"),
    ],
)
def test_an_invalid_space_is_refused_naming_the_field(tmp_path, flags, said) -> None:
    with pytest.raises(StationError) as refused:
        space.load(str(write_space(tmp_path, flags=flags)))
    assert said in str(refused.value)


def test_an_unknown_objective_is_refused(tmp_path) -> None:
    with pytest.raises(StationError, match="objective"):
        space.load(str(write_space(tmp_path, objective="tokens_per_dollar")))


def test_sampled_values_stay_inside_the_space() -> None:
    searched = space.SearchSpace(
        name="s",
        description="d",
        flags={
            "max-num-seqs": space.Range(low=8, high=256, step=8),
            "gpu-memory-utilization": space.Range(low=0.8, high=0.95),
            "enable-prefix-caching": space.Choices(choices=[True, False]),
        },
    )
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    for _ in range(20):
        values = searched.suggest(study.ask())
        assert values["max-num-seqs"] % 8 == 0 and 8 <= values["max-num-seqs"] <= 256
        assert isinstance(values["max-num-seqs"], int)
        assert 0.8 <= values["gpu-memory-utilization"] <= 0.95
        assert values["enable-prefix-caching"] in (True, False)


def test_constraints_count_failures_always_and_missing_figures_as_unmet() -> None:
    searched = space.SearchSpace(
        name="s",
        description="d",
        flags={"max-num-seqs": space.Choices(choices=[8])},
        constraints={"p99_ttft_ms": space.Limit(at_most=1000), "per_session_tok_s_p10": space.Limit(at_least=50)},
    )
    assert searched.violations({"failed": 0, "p99_ttft_ms": 900, "per_session_tok_s_p10": 60}) == {
        "failed": 0,
        "p99_ttft_ms": -100,
        "per_session_tok_s_p10": -10,
    }
    assert searched.violations({"failed": 2, "p99_ttft_ms": 1500, "per_session_tok_s_p10": None})["failed"] == 2
    assert searched.violations({"failed": 0, "p99_ttft_ms": 1500})["per_session_tok_s_p10"] == space.UNMET


def test_a_candidate_is_the_base_recipe_with_the_values_on_top() -> None:
    base = recipe.load("cpu-smoke")
    made = space.candidate(base, {"max-num-seqs": 8, "enable-prefix-caching": False}, "cpu-smoke-trial3")
    assert made.engine.args["max-num-seqs"] == 8 and made.engine.args["enable-prefix-caching"] is False
    assert made.engine.args["tool-call-parser"] == base.engine.args["tool-call-parser"]
    assert made.name == "cpu-smoke-trial3" and made.model == base.model


def throughput_formula_standing_in_for_an_engine(calls: list[dict]) -> search.Measure:
    """Stands in for an engine under a replay: throughput grows with max-num-seqs, TTFT too (256 breaks the
    1,000 ms limit), prefix caching adds 10%. Records each configuration it was asked to measure."""

    def measure(made: recipe.Recipe, values: dict[str, Any], out: Path) -> Measurement:
        calls.append(values)
        seqs = made.engine.args.get("max-num-seqs", 256)
        caching = made.engine.args.get("enable-prefix-caching", True)
        throughput = seqs * (1.1 if caching else 1.0)
        return Measurement(recipe=made.name, values=values, metrics=metrics(throughput, ttft=seqs * 5), seconds=1)

    return measure


def start(tmp_path, trials: int = 6, ab_rounds: int = 2) -> tuple[search.TuneRun, recipe.Recipe]:
    base = recipe.load("cpu-smoke")
    run = search.start_or_resume(
        "local",
        "cpu-smoke",
        base,
        space.load(str(write_space(tmp_path))),
        load_profile("agentic-cpu"),
        trials,
        ab_rounds,
        fresh=True,
    )
    run.save()
    return run, base


def test_the_search_ranks_within_the_constraints_first_and_measures_each_configuration_once(tmp_path) -> None:
    run, base = start(tmp_path, trials=6)
    calls: list[dict] = []
    found = search.search(run, base, throughput_formula_standing_in_for_an_engine(calls), QUIET)
    assert len(search.distinct(found)) == 6  # the whole space: 3 x 2 configurations
    assert len(calls) == 6 == len({tuple(sorted(c.items())) for c in calls})  # a repeat is not measured again
    assert len(search.counted(found)) >= 6
    top = search.best(run, found)
    assert search.measurement(top).values == {"max-num-seqs": 32, "enable-prefix-caching": True}
    ranks = [row.rank for row in report.rows(run, found)]
    assert ranks[0] == "1" and all(r == "-" for r in ranks[ranks.index("-") :])  # outside the limits: unranked


def test_an_interrupted_search_resumes_counting_only_finished_trials(tmp_path) -> None:
    run, base = start(tmp_path, trials=3)
    calls: list[dict] = []
    measure = throughput_formula_standing_in_for_an_engine(calls)
    study = search.study(run)
    study.ask()  # a trial the interrupted run had started: stays RUNNING in study.db
    resumed = search.start_or_resume(
        "local", "cpu-smoke", base, run.space, run.profile, run.trials, run.ab_rounds, fresh=False
    )
    assert resumed.tune_id == run.tune_id
    found = search.search(resumed, base, measure, QUIET)
    assert len(search.distinct(found)) == 3
    assert len(search.interrupted(found)) == 1


def test_a_configuration_that_does_not_serve_is_recorded_and_never_best(tmp_path) -> None:
    run, base = start(tmp_path, trials=4)

    def refusing(made: recipe.Recipe, values: dict[str, Any], out: Path) -> Measurement:
        return Measurement(recipe=made.name, values=values, error="vLLM rejects --max-num-seqs", seconds=1)

    found = search.search(run, base, refusing, QUIET)
    assert search.best(run, found) is None
    assert all(row.outcome == "did not serve: vLLM rejects --max-num-seqs" for row in report.rows(run, found))


def rounds(a: list[float], b: list[float], b_ttft: float = 100) -> search.Verdict:
    return search.Verdict(
        rounds=[
            (
                Measurement(recipe="a", values={}, metrics=metrics(x), seconds=1),
                Measurement(recipe="b", values={}, metrics=metrics(y, ttft=b_ttft), seconds=1),
            )
            for x, y in zip(a, b, strict=True)
        ]
    )


def test_the_verdict_claims_a_win_only_on_the_means_of_every_round_within_the_constraints() -> None:
    searched = space.SearchSpace(
        name="s",
        description="d",
        flags={"max-num-seqs": space.Choices(choices=[8])},
        constraints={"p99_ttft_ms": space.Limit(at_most=1000)},
    )
    won = search.judge(searched, rounds([100, 110], [130, 125]))
    assert won.beats and won.a_mean == 105 and won.b_mean == 127.5
    assert "beats the running configuration: output_throughput 127.50 vs 105.00 (1.21x), better in 2 of 2" in won.said
    assert not search.judge(searched, rounds([100, 110], [90, 120])).beats
    one_round = search.judge(searched, rounds([100, 110], [200, 105]))  # a better mean, from one round only
    assert not one_round.beats and "nothing beat the running configuration" in one_round.said
    assert "better in 1 of 2 rounds" in one_round.said
    broke = search.judge(searched, rounds([100, 110], [130, 125], b_ttft=2000))
    assert not broke.beats and "broke a constraint" in broke.said
    invalid = rounds([100], [130])
    invalid.rounds[0][1].problems.append("3 of 24 requests failed")
    assert not search.judge(searched, invalid).beats


def test_the_winner_extends_the_running_recipe_and_loads(tmp_path) -> None:
    run, _ = start(tmp_path)
    run.best_trial = 4
    run.verdict = search.Verdict(beats=True, said="the best trial beats the running configuration")
    path = write_winner(run, {"max-num-seqs": 32})
    data = yaml.safe_load(path.read_text())
    assert data["extends"] == "cpu-smoke" and data["engine"] == {"args": {"max-num-seqs": 32}}
    winner = recipe.load(str(path))
    assert winner.engine.args["max-num-seqs"] == 32 and winner.tuned["trial"] == 4
    assert winner.engine.args["tool-call-parser"] == "hermes"  # the rest is the running recipe's
    text = path.read_text(encoding="utf-8")
    assert f"invoke promote --host local --recipe {path}" in text
    assert "≤" in text and "\\u" not in text  # the constraints read as written


def test_the_report_and_chart_are_written(tmp_path) -> None:
    run, base = start(tmp_path, trials=4, ab_rounds=1)
    measure = throughput_formula_standing_in_for_an_engine([])
    found = search.search(run, base, measure, QUIET)
    top = search.best(run, found)
    values = search.measurement(top).values
    run.verdict = search.interleave(run, base, space.candidate(base, values, "b"), values, measure, QUIET)
    run.winner = f"tune/{run.tune_id}/winner.yml"
    path = report.write(run, found)
    text = path.read_text()
    assert "| Rank | Trial | Flags |" in text and "**Verdict:** " in text
    assert f"invoke promote --host local --recipe {paths.RESULTS / run.winner}" in text
    assert (path.parent / "pareto.png").stat().st_size > 10_000
    shown = Console(record=True, width=400)
    shown.print(report.console_table(run, found))
    first = report.rows(run, found)[0]
    in_place = r"\s*│\s*".join(re.escape(cell) for cell in first.cells()[3:7])  # objective, TTFT, TPOT, session p10
    assert re.search(in_place, shown.export_text())


def test_the_pareto_front_keeps_only_unbeaten_points() -> None:
    points = [(100, 50), (200, 80), (150, 40), (300, 70), (400, 90)]
    assert report.pareto_front(points) == [(100, 50), (200, 80), (400, 90)]


def test_a_tune_needs_a_trial() -> None:
    with pytest.raises(StationError, match="at least one trial"):
        search.require_trials(0)


def test_a_mapping_choice_is_sampled_whole() -> None:
    depth = [{"method": "mtp", "num_speculative_tokens": n} for n in (1, 3)]
    searched = space.SearchSpace(name="s", description="d", flags={"speculative-config": space.Choices(choices=depth)})
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    seen = [searched.suggest(study.ask())["speculative-config"] for _ in range(10)]
    assert all(value in depth for value in seen) and len({v["num_speculative_tokens"] for v in seen}) == 2


def test_a_space_smaller_than_the_budget_is_measured_once_through(tmp_path) -> None:
    run, base = start(tmp_path, trials=12)
    calls: list[dict] = []
    found = search.search(run, base, throughput_formula_standing_in_for_an_engine(calls), QUIET)
    assert run.space.size == 6 and len(calls) == 6 and len(search.distinct(found)) == 6
