"""`invoke smoke-bench --host local` of cpu-smoke's engine (a small benchmark): a complete run, counted by
Prometheus, with provenance."""

from __future__ import annotations

import json
import subprocess

from station import paths
from station.bench import runs
from tests.conftest import cpu_facts, this_machine
from tests.integration.conftest import ENGINE, engine_argv


def test_every_prompt_completed_with_every_output_token(bench, small_bench) -> None:
    metrics = bench.record["metrics"]
    print(f"cpu-smoke: {metrics['output_throughput']:.0f} output tok/s in {metrics['duration']:.1f} s")
    assert metrics["completed"] == small_bench.bench.num_prompts
    assert metrics["failed"] == 0
    assert metrics["total_output_tokens"] == small_bench.bench.num_prompts * small_bench.bench.output_len
    assert bench.record["problems"] == []


def test_the_table_shows_measured_and_reference_figures(bench, small_bench) -> None:
    for expected in (
        "Output tok/s",
        "11,840",
        "TTFT p50 / p99",
        "TPOT p50 / p99",
        "ITL p50 / p99",
        "Completed / failed",
        f"{small_bench.bench.num_prompts} / 0",
        "Achieved concurrency",
    ):
        assert expected in bench.invocation.output


def test_prometheus_counted_the_generated_tokens(bench) -> None:
    assert bench.tokens_after - bench.tokens_before >= bench.record["metrics"]["total_output_tokens"]


def test_result_carries_the_engine_and_bundle_provenance(bench, smoke, docker_client) -> None:
    provenance = bench.record["provenance"]
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=paths.ROOT, capture_output=True, text=True).stdout.strip()
    assert provenance["bundle"]["commit"] == head
    assert provenance["recipe"]["name"] == "cpu-smoke-small-bench"
    assert provenance["engine"]["image"] == smoke.engine.image
    assert provenance["engine"]["image_id"] == docker_client.images.get(smoke.engine.image).id
    assert provenance["engine"]["argv"] == engine_argv(smoke)
    assert "VLLM_CPU_KVCACHE_SPACE=2" in provenance["engine"]["env"]
    assert not any(item.startswith("VLLM_API_KEY=") for item in provenance["engine"]["env"])
    assert not any(item.startswith(("PATH=", "HOME=")) for item in provenance["engine"]["env"])  # an allow-list
    assert provenance["host"]["name"] == "local" and provenance["host"]["cpu_count"] > 0
    assert provenance["host"]["cpu_flags"] == cpu_facts()["flags"]
    assert provenance["host"]["cpu_bfloat16"] == cpu_facts()["bfloat16"]


def test_benchmark_ran_from_the_host_against_the_engine_on_its_network(bench) -> None:
    argv = bench.record["provenance"]["bench"]["argv"]
    assert argv[:5] == ["vllm", "bench", "serve", "--base-url", f"http://{ENGINE}:8000"]
    assert bench.record["provenance"]["bench"]["image_id"] == bench.record["provenance"]["engine"]["image_id"]


def test_raw_result_and_log_are_kept_beside_the_record(bench) -> None:
    assert (bench.run_dir / "bench.json").stat().st_size > 0
    assert "Serving Benchmark Result" in (bench.run_dir / "bench.log").read_text()


def test_no_gpu_telemetry_is_recorded_explicitly(bench) -> None:
    telemetry = bench.record["telemetry"]
    assert telemetry["present"] is False
    assert "nvml" in telemetry["reason"] and "nvidia-smi" in telemetry["reason"]
    assert json.loads((bench.run_dir / "telemetry.json").read_text())["present"] is False
    assert "GPU telemetry" in bench.invocation.output and "none: " in bench.invocation.output


def test_provenance_has_the_gpu_facts_vllm_version_and_profile(bench, small_bench) -> None:
    provenance = bench.record["provenance"]
    assert provenance["gpu"]["present"] is False and provenance["gpu"]["count"] == 0
    assert provenance["vllm_version"] == small_bench.engine.vllm_version
    assert bench.record["profile"] == small_bench.bench.model_dump()


def test_the_run_is_in_the_index(bench) -> None:
    (entry,) = runs.select([bench.record["run_id"]])
    assert entry.output_throughput == bench.record["metrics"]["output_throughput"]
    assert entry.gpu == "none" and entry.recipe == "cpu-smoke-small-bench"
    assert entry.cpu == this_machine().cpu_label  # what --baseline and compare judge a CPU run by
