"""Accuracy drift arithmetic: exact matches, first divergence, log-probability differences, thresholds."""

from __future__ import annotations

import pytest

from station.bench import accuracy
from station.errors import StationError
from station.recipes import recipe


def answer(prompt: str, tokens: list[str], logprob: float = -1.0) -> dict:
    return {"prompt": prompt, "tokens": tokens, "top_logprobs": [{t: logprob, "x": -5.0} for t in tokens]}


def test_identical_answers_match_exactly_with_no_difference() -> None:
    a = [answer("p1", ["a", "b", "c"]), answer("p2", ["d", "e"])]
    drift = accuracy.compare(a, a)
    assert drift.exact_match_rate == 1.0
    assert drift.diverged == 0 and drift.mean_first_divergence is None
    assert drift.mean_abs_logprob_diff == 0.0
    assert drift.compared_positions == 10  # 5 positions x 2 shared tokens
    assert accuracy.problems(drift, accuracy.Thresholds()) == []


def test_divergence_position_and_logprob_difference_hand_computed() -> None:
    a = [answer("p1", ["a", "b", "c"], -1.0), answer("p2", ["d", "e"], -1.0)]
    b = [answer("p1", ["a", "z", "c"], -1.5), answer("p2", ["d", "e"], -1.0)]
    drift = accuracy.compare(a, b)
    assert drift.exact_match_rate == 0.5
    assert drift.mean_first_divergence == 1.0
    # p1 positions 0-1 (up to and including the divergence): shared "x" twice (diff 0) and "a" once (diff 0.5);
    # p2 positions 0-1: "d", "x", "e", "x" (diff 0)
    assert drift.compared_positions == 7
    assert drift.mean_abs_logprob_diff == pytest.approx(0.5 / 7)


def test_a_shorter_answer_diverges_where_it_ends() -> None:
    assert accuracy.first_divergence(["a", "b"], ["a", "b", "c"]) == 2
    assert accuracy.first_divergence(["a"], ["a"]) is None


def test_thresholds_name_what_drifted() -> None:
    drift = accuracy.Drift(
        prompts=10,
        exact_match_rate=0.5,
        diverged=5,
        mean_first_divergence=3.0,
        mean_abs_logprob_diff=0.2,
        compared_positions=100,
    )
    found = accuracy.problems(drift, accuracy.Thresholds(min_exact_match=0.9, max_logprob_diff=0.05))
    assert found == [
        "exact-match rate 0.50 is below 0.9",
        "mean top-5 log-probability difference 0.2000 is above 0.05",
    ]


def test_different_prompt_sets_are_refused() -> None:
    with pytest.raises(StationError, match="same prompts"):
        accuracy.compare([answer("p1", ["a"])], [answer("p2", ["a"])])


def test_step_pairs() -> None:
    ladder = recipe.load_ladder("cpu-ladder")
    assert accuracy.step_pair(ladder, "0,1") == (0, 1)
    assert accuracy.step_pair(ladder, "1,1") == (1, 1)
    for bad in ("0", "0,1,2", "0,9", "a,b"):
        with pytest.raises(StationError, match="is not two steps of cpu-ladder"):
            accuracy.step_pair(ladder, bad)


def test_lm_eval_hook_says_how_to_install_it(monkeypatch) -> None:
    monkeypatch.setattr(accuracy.shutil, "which", lambda name: None)
    with pytest.raises(StationError, match="lm-eval is not installed") as error:
        accuracy.lm_eval_argv(recipe.load("cpu-smoke"), "http://127.0.0.1:8000", "gsm8k")
    assert "pip install" in error.value.hint


def test_lm_eval_hook_targets_the_openai_endpoint(monkeypatch) -> None:
    monkeypatch.setattr(accuracy.shutil, "which", lambda name: "/usr/bin/lm_eval")
    argv = accuracy.lm_eval_argv(recipe.load("cpu-smoke"), "http://127.0.0.1:8000", "gsm8k")
    assert argv[:3] == ["lm_eval", "--model", "local-completions"]
    assert "base_url=http://127.0.0.1:8000/v1/completions" in argv[4] and "model=tiny-llama" in argv[4]
