"""The agentic profile on the CPU engine: 8 sessions x 3 turns with AIPerf, measured as agents feel it.

The prefix-cache hit rate the run reports comes from the engine's own
counters; Prometheus scrapes the same counters, so over the same window the
two must agree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from station import paths
from station.recipes import profiles
from tests.integration.conftest import (
    GENERATED,
    Invocation,
    engine_target_up,
    invoke,
    prometheus_query,
    succeeded,
    wait_for,
)

HITS, QUERIES = "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"


@dataclass(frozen=True)
class AgenticOutcome:
    invocation: Invocation
    record: dict[str, Any]
    prometheus_hits: float
    prometheus_queries: float


@pytest.fixture(scope="module")
def agentic(first_deploy) -> AgenticOutcome:
    """`invoke smoke-bench --profile agentic-cpu`, with Prometheus' prefix-cache counters read before and after."""
    wait_for(engine_target_up, 60, "Prometheus to scrape the engine")
    before = {name: prometheus_query(name) for name in (HITS, QUERIES, GENERATED)}
    runs_before = set(paths.RESULTS.glob("*-local-cpu-smoke-agentic-cpu"))
    run = succeeded(invoke("smoke-bench", "--host", "local", "--profile", "agentic-cpu"))
    (run_dir,) = set(paths.RESULTS.glob("*-local-cpu-smoke-agentic-cpu")) - runs_before
    record = json.loads((run_dir / "result.json").read_text())
    expected = before[GENERATED] + record["metrics"]["engine_generation_tokens"]
    wait_for(lambda: prometheus_query(GENERATED) >= expected, 30, "Prometheus to see the run's tokens")
    hits, queries = prometheus_query(HITS) - before[HITS], prometheus_query(QUERIES) - before[QUERIES]
    return AgenticOutcome(run, record, hits, queries)


def test_every_session_and_turn_completes(agentic) -> None:
    metrics, profile = agentic.record["metrics"], profiles.load("agentic-cpu")
    print(f"\nagentic-cpu: {json.dumps(metrics, indent=1)}")
    sessions = (metrics["sessions"], metrics["sessions_completed"], metrics["sessions_failed"])
    assert sessions == (profile.sessions, profile.sessions, 0)
    assert (metrics["requests"], metrics["failed"]) == (profile.sessions * profile.turns, 0)
    assert agentic.record["problems"] == []
    assert len(metrics["ttft_p99_by_turn_ms"]) == profile.turns


def test_the_engine_generated_every_answer(agentic) -> None:
    profile = profiles.load("agentic-cpu")
    answers = profile.sessions * profile.turns * profile.output_tokens
    assert agentic.record["metrics"]["engine_generation_tokens"] == answers


def test_the_shared_prefix_hits_the_cache_as_prometheus_counts_it(agentic) -> None:
    reported = agentic.record["metrics"]["prefix_cache_hit_rate"]
    assert reported > 0
    assert agentic.prometheus_queries > 0
    assert abs(reported - agentic.prometheus_hits / agentic.prometheus_queries) <= 0.01


def test_the_record_says_which_client_ran_where(agentic) -> None:
    client, provenance = agentic.record["client"], agentic.record["provenance"]
    assert (client["tool"], client["version"], client["on"]) == ("aiperf", "0.13.0", "controller")
    assert provenance["host"]["name"] == "local"
    assert provenance["engine"]["labels"]["io.station.recipe"] == "cpu-smoke"
    assert agentic.record["profile"]["name"] == "agentic-cpu"


def test_the_table_shows_what_agents_feel(agentic) -> None:
    for row in ("Per-session output tok/s p10 / p50", "Turn latency p50 / p99", "Prefix-cache hit rate (engine)"):
        assert row in agentic.invocation.output


def test_a_profile_longer_than_the_context_is_refused_before_it_runs(first_deploy, tmp_path: Path) -> None:
    data = yaml.safe_load((profiles.PROFILES / "agentic-cpu.yml").read_text()) | {"name": "too-long", "turns": 300}
    path = tmp_path / "too-long.yml"
    path.write_text(yaml.safe_dump(data))
    run = invoke("smoke-bench", "--host", "local", "--profile", str(path))
    assert run.returncode == 1 and "Traceback" not in run.output
    assert "profile too-long: its last turn needs 39424 tokens" in run.output
    assert not list(paths.RESULTS.glob("*-local-cpu-smoke-too-long"))


def test_an_unknown_profile_lists_the_available_ones(first_deploy) -> None:
    run = invoke("smoke-bench", "--host", "local", "--profile", "chatty")
    assert run.returncode == 1
    assert "unknown profile 'chatty'" in run.output and "agentic-cpu" in run.output


def test_an_agentic_run_is_refused_as_the_baseline_of_a_random_profile_run(agentic) -> None:
    runs_before = set(paths.RESULTS.iterdir())
    run = invoke("smoke-bench", "--host", "local", "--baseline", agentic.record["run_id"])
    assert run.returncode == 1 and "Traceback" not in run.output
    assert f"not a usable baseline: {agentic.record['run_id']} replayed an agentic profile" in run.output
    assert set(paths.RESULTS.iterdir()) == runs_before  # refused before measuring anything
