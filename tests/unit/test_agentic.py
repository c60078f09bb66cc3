"""AIPerf's records turned into what agents feel: a real AIPerf 0.13 run (8 sessions x 3 turns) kept as a fixture."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest

from station.bench import agentic
from station.deploy.agent_check import hint_for
from station.recipes import profiles, recipe
from tests.conftest import FIXTURES

COUNTED = {
    "vllm:prefix_cache_hits": 21_000.0,
    "vllm:prefix_cache_queries": 30_000.0,
    "vllm:generation_tokens": 768.0,
    "vllm:prompt_tokens": 30_000.0,
}


@pytest.fixture
def profile() -> profiles.AgenticProfile:
    return profiles.load("agentic-cpu")


@pytest.fixture
def metrics(profile) -> agentic.AgenticMetrics:
    return agentic.summarise(profile, FIXTURES / "aiperf", COUNTED)


def test_sessions_turns_and_failures_are_counted(metrics, profile) -> None:
    assert (metrics.sessions, metrics.sessions_completed, metrics.sessions_failed) == (8, 8, 0)
    assert (metrics.requests, metrics.failed) == (24, 0)
    assert agentic.problems(profile, metrics) == []


def test_per_session_and_per_turn_figures_are_ordered(metrics, profile) -> None:
    assert 0 < metrics.per_session_tok_s_p10 <= metrics.per_session_tok_s_p50
    assert 0 < metrics.turn_latency_p50_ms <= metrics.turn_latency_p99_ms
    assert len(metrics.ttft_p99_by_turn_ms) == profile.turns
    assert metrics.p99_ttft_ms == max(metrics.ttft_p99_by_turn_ms)


def test_the_hit_rate_is_the_engines_own(metrics) -> None:
    assert metrics.prefix_cache_hit_rate == pytest.approx(0.7)
    assert metrics.engine_generation_tokens == 768


def test_a_client_that_keeps_sessions_idle_is_flagged(metrics, profile) -> None:
    assert not metrics.client_bound  # this run kept its sessions as busy as latency and think time allow
    slow_client = profile.model_copy(update={"think_time_ms": 0})  # then 8 sessions should keep ~8 requests in flight
    assert agentic.summarise(slow_client, FIXTURES / "aiperf", COUNTED).client_bound


def test_a_failed_request_fails_its_session(tmp_path: Path, profile) -> None:
    shutil.copytree(FIXTURES / "aiperf", tmp_path / "aiperf")
    records = (tmp_path / "aiperf" / "profile_export.jsonl").read_text().splitlines()
    records[0] = records[0].replace('"metrics":{', '"error":{"code":500},"metrics":{', 1)
    (tmp_path / "aiperf" / "profile_export.jsonl").write_text("\n".join(records) + "\n")
    failed = agentic.summarise(profile, tmp_path / "aiperf", COUNTED)
    assert (failed.failed, failed.sessions_failed, failed.sessions_completed) == (1, 1, 7)
    assert agentic.problems(profile, failed) == ["1 of 24 requests failed"]


def test_a_replay_whose_every_request_failed_says_so(tmp_path: Path) -> None:
    """AIPerf exits 1 without its summary when no request succeeded; its records still say why."""
    records = (FIXTURES / "aiperf" / "profile_export.jsonl").read_text().splitlines()
    timed_out = [r.replace('"metrics":{', '"error":{"type":"TimeoutError"},"metrics":{', 1) for r in records]
    (tmp_path / "profile_export.jsonl").write_text("\n".join(timed_out))
    assert agentic.every_request_failed(tmp_path) == "all 24 requests failed (TimeoutError)"
    (tmp_path / "profile_export.jsonl").write_text("\n".join([timed_out[0], *records[1:]]))
    assert agentic.every_request_failed(tmp_path) is None  # some succeeded: summarise counts the failures
    assert agentic.every_request_failed(tmp_path / "absent") is None


def test_aiperf_replays_the_profile_with_the_models_tokenizer_and_server_counts(profile, tmp_path) -> None:
    args = agentic.aiperf_args(profile, recipe.load("cpu-smoke"), "http://127.0.0.1:8000", tmp_path)
    pairs = dict(itertools.pairwise(args))
    assert pairs["--url"] == "http://127.0.0.1:8000" and pairs["--endpoint-type"] == "chat"
    assert pairs["--conversation-num"] == pairs["--concurrency"] == "8"
    assert pairs["--conversation-turn-mean"] == "3" and pairs["--shared-system-prompt-length"] == "1024"
    assert "--use-server-token-count" in args and "--streaming" in args
    assert "--no-server-metrics" in args and "--no-gpu-telemetry" in args  # station measures both itself
    assert "--api-key" not in args  # passed through the environment, never on a command line
    assert pairs["--random-seed"] == "0"
    reseeded = agentic.aiperf_args(profile.model_copy(update={"seed": 7}), recipe.load("cpu-smoke"), "u", tmp_path)
    assert dict(itertools.pairwise(reseeded))["--random-seed"] == "7"


@pytest.mark.parametrize(
    ("engine_says", "fix"),
    [
        ('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set', "tool-call-parser"),
        ("As of transformers v4.44, default chat template is no longer allowed", "engine.args chat-template"),
    ],
)
def test_the_engines_refusals_name_the_recipe_setting_that_fixes_them(engine_says: str, fix: str) -> None:
    assert fix in hint_for(engine_says)


def test_time_per_output_token_counts_the_tokens_after_the_first() -> None:
    def record(latency: float | None, ttft: float, tokens: int) -> dict:
        metrics = {"time_to_first_token": {"value": ttft}, "output_sequence_length": {"value": tokens}}
        if latency is not None:
            metrics["request_latency"] = {"value": latency}
        return {"metrics": metrics}

    assert agentic.time_per_output_token(record(410.0, 100.0, 32)) == 10.0
    assert agentic.time_per_output_token(record(100.0, 100.0, 1)) is None  # one token: no time per token
    assert agentic.time_per_output_token(record(None, 100.0, 32)) is None  # failed: no latency
