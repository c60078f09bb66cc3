"""Parsing `vllm bench serve` results and deciding whether a run is a valid measurement."""

from __future__ import annotations

import json

import pytest

from station.bench import bench_result
from station.errors import StationError
from station.recipes import recipe
from tests.conftest import FIXTURES

SAMPLE = FIXTURES / "bench-result.json"  # a real cpu-smoke run, per-request lists dropped


@pytest.fixture
def raw() -> dict:
    return json.loads(SAMPLE.read_text())


@pytest.fixture
def profile() -> recipe.BenchProfile:
    return recipe.load("cpu-smoke").bench


def _parse(tmp_path, data: dict) -> bench_result.BenchResult:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(data))
    return bench_result.parse(path)


def test_a_real_result_parses_with_its_figures(raw) -> None:
    result = bench_result.parse(SAMPLE)
    assert result.completed == raw["completed"] == 256
    assert result.output_throughput == pytest.approx(raw["output_throughput"])
    assert result.p99_ttft_ms == pytest.approx(raw["p99_ttft_ms"])
    assert result.spec_decode_acceptance_rate is None


def test_achieved_concurrency_is_total_latency_over_wall_time(tmp_path, raw) -> None:
    raw |= {"mean_e2el_ms": 10_000.0, "completed": 100, "duration": 8.0, "max_concurrency": 256}
    result = _parse(tmp_path, raw)
    assert result.achieved_concurrency == pytest.approx(125.0)
    assert result.client_bound


def test_a_run_near_its_concurrency_is_not_client_bound() -> None:
    result = bench_result.parse(SAMPLE)
    assert result.achieved_concurrency > 0.8 * 256
    assert not result.client_bound


def test_a_complete_run_has_no_problems(profile) -> None:
    assert bench_result.problems(bench_result.parse(SAMPLE), profile) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"failed": 3}, "3 of 256 requests failed"),
        ({"completed": 250}, "250 requests completed, 256 were sent"),
        ({"total_output_tokens": 1000}, "1000 output tokens, expected 131072"),
    ],
)
def test_incomplete_runs_are_named(tmp_path, raw, profile, change, problem) -> None:
    assert problem in bench_result.problems(_parse(tmp_path, raw | change), profile)


def test_a_missing_result_says_where_to_look(tmp_path) -> None:
    with pytest.raises(StationError, match="no benchmark result"):
        bench_result.parse(tmp_path / "bench.json")


def test_a_file_that_is_not_a_result_is_rejected(tmp_path, raw) -> None:
    del raw["output_throughput"]
    with pytest.raises(StationError, match="is not a vllm bench result"):
        _parse(tmp_path, raw)
