"""`invoke smoke-bench --host local`: a complete run, counted by Prometheus, with provenance."""

from __future__ import annotations

import subprocess

from station import paths, render


def test_every_prompt_completed_with_every_output_token(bench, smoke) -> None:
    metrics = bench.record["metrics"]
    print(f"cpu-smoke: {metrics['output_throughput']:.0f} output tok/s in {metrics['duration']:.1f} s")
    assert metrics["completed"] == smoke.bench.num_prompts
    assert metrics["failed"] == 0
    assert metrics["total_output_tokens"] == smoke.bench.num_prompts * smoke.bench.output_len
    assert bench.record["problems"] == []


def test_the_table_shows_measured_and_reference_figures(bench) -> None:
    for expected in (
        "Output tok/s",
        "11,840",
        "TTFT p50 / p99",
        "TPOT p50 / p99",
        "ITL p50 / p99",
        "Completed / failed",
        "256 / 0",
        "Achieved concurrency",
    ):
        assert expected in bench.invocation.output


def test_prometheus_counted_the_generated_tokens(bench) -> None:
    assert bench.tokens_after - bench.tokens_before >= bench.record["metrics"]["total_output_tokens"]


def test_result_carries_the_engine_and_bundle_provenance(bench, smoke, docker_client) -> None:
    provenance = bench.record["provenance"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=paths.ROOT, capture_output=True, text=True).stdout.strip()
    assert provenance["bundle"]["commit"] == head
    assert provenance["recipe"]["name"] == "cpu-smoke"
    assert provenance["engine"]["image"] == smoke.engine.image
    assert provenance["engine"]["image_id"] == docker_client.images.get(smoke.engine.image).id
    assert provenance["engine"]["argv"] == render.serve_argv(smoke)
    assert "VLLM_CPU_KVCACHE_SPACE=4" in provenance["engine"]["env"]
    assert not any(item.startswith("VLLM_API_KEY=") for item in provenance["engine"]["env"])
    assert provenance["host"]["name"] == "local" and provenance["host"]["cpu_count"] > 0


def test_benchmark_ran_from_the_host_against_the_engine_on_its_network(bench) -> None:
    argv = bench.record["provenance"]["bench"]["argv"]
    assert argv[:5] == ["vllm", "bench", "serve", "--base-url", "http://station-vllm:8000"]
    assert bench.record["provenance"]["bench"]["image_id"] == bench.record["provenance"]["engine"]["image_id"]


def test_raw_result_and_log_are_kept_beside_the_record(bench) -> None:
    assert (bench.run_dir / "bench.json").stat().st_size > 0
    assert "Serving Benchmark Result" in (bench.run_dir / "bench.log").read_text()
