"""Replay an agentic traffic profile against a deployed engine with AIPerf, and measure it as agents feel it.

Why AIPerf (pinned in pyproject.toml): vLLM's own benchmark replays
independent requests only; coding agents send conversations, each turn the
whole history so far, with think time between turns. AIPerf 0.13 generates
exactly that (`--conversation-num`, `--conversation-turn-mean`,
`--shared-system-prompt-length`, `--conversation-turn-delay-mean`) and keeps a
record per request. GuideLLM 0.8.1 replays conversations too, but brings torch
and transformers into the client and measured half of vLLM's benchmark on the
same engine on 2 cores.

AIPerf runs on the controller, against the engine as this machine reaches it
(directly on a local host, through an SSH forward otherwise); the result
records where the client ran. The prefix-cache hit rate comes from the
engine's own counters, read before and after the run.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import requests
from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel
from rich.console import Console

from station import paths
from station.errors import StationError
from station.generators import tiny_model
from station.recipes.profiles import AgenticProfile
from station.recipes.recipe import Recipe

AIPERF_VERSION = "0.13.0"
# The engine's own counters the run reads before and after (vLLM's metric family names, without _total).
COUNTERS = ("vllm:prefix_cache_hits", "vllm:prefix_cache_queries", "vllm:generation_tokens", "vllm:prompt_tokens")
# Sessions kept this much less busy than their latency and think time allow: the client, not the engine, was slow.
CLIENT_BOUND_SHARE = 0.8
# AIPerf's CLI, started with the key from the environment: an argv would show it to every user of the machine.
LAUNCH = (
    "import os, sys; from aiperf.cli import app; "
    "sys.argv = ['aiperf', *sys.argv[1:], '--api-key', os.environ.pop('STATION_ENGINE_KEY')]; app()"
)


class AgenticMetrics(BaseModel):
    """What agents feel, per session and per turn, with the engine's own prefix-cache figures over the run."""

    sessions: int
    sessions_completed: int
    sessions_failed: int
    requests: int
    failed: int
    duration_s: float
    output_throughput: float
    per_session_tok_s_p10: float
    per_session_tok_s_p50: float
    turn_latency_p50_ms: float
    turn_latency_p99_ms: float
    p99_ttft_ms: float
    p99_tpot_ms: float | None = None  # per request, (latency - TTFT) / (tokens - 1), as vLLM's benchmark counts it
    ttft_p99_by_turn_ms: list[float]
    achieved_concurrency: float
    expected_concurrency: float  # sessions x latency / (latency + think time): what an idle client would reach
    client_bound: bool
    prefix_cache_hit_rate: float | None
    engine_generation_tokens: float


def engine_counters(base_url: str, api_key: str) -> dict[str, float]:
    """Sum of each counter over its labels, from the engine's /metrics."""
    headers = {"Authorization": f"Bearer {api_key}"}
    response = requests.get(f"{base_url}/metrics", headers=headers, timeout=30)
    response.raise_for_status()
    found = {name: 0.0 for name in COUNTERS}
    for family in text_string_to_metric_families(response.text):
        if family.name in found:
            found[family.name] = sum(sample.value for sample in family.samples if sample.name.endswith("_total"))
    return found


def tokenizer_for(recipe: Recipe) -> str:
    """What AIPerf counts and builds prompts with: the model's own tokenizer.

    A hub model's id (and revision) is fetched by AIPerf. The only model station
    ships inside an image is the generated tiny one; its tokenizer is generated
    here the same way (station/generators/tiny_model.py is deterministic).
    """
    if recipe.model.source == "hub":
        return recipe.model.id
    folder = paths.CACHE / "tokenizers" / recipe.model.served_name
    if not folder.is_dir():
        folder.parent.mkdir(parents=True, exist_ok=True)
        written = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}-"))
        tiny_model.write(written)
        try:
            written.rename(folder)  # whole, so that a command reading it beside this one never sees half of it
        except OSError:
            shutil.rmtree(written)  # another command wrote the same files first
    return str(folder)


def aiperf_args(profile: AgenticProfile, recipe: Recipe, base_url: str, out: Path) -> list[str]:
    """AIPerf's arguments for the profile: sessions at once, each turn's prompt the history so far."""
    args = [
        "profile",
        "--model-names", recipe.model.served_name,
        "--url", base_url,
        "--endpoint-type", "chat",
        "--streaming",
        "--tokenizer", tokenizer_for(recipe),
        "--use-server-token-count",
        "--conversation-num", str(profile.sessions),
        "--concurrency", str(profile.sessions),
        "--conversation-turn-mean", str(profile.turns),
        "--conversation-turn-stddev", "0",
        "--conversation-turn-delay-mean", str(profile.think_time_ms),
        "--shared-system-prompt-length", str(profile.shared_prefix_tokens),
        "--prompt-input-tokens-mean", str(profile.turn_input_tokens),
        "--prompt-input-tokens-stddev", "0",
        "--prompt-output-tokens-mean", str(profile.output_tokens),
        "--prompt-output-tokens-stddev", "0",
        "--extra-inputs", "ignore_eos:true",
        "--random-seed", str(profile.seed),
        "--request-timeout-seconds", str(profile.timeout_s),
        "--output-artifact-dir", str(out),
        "--ui-type", "none",
        # station reads the engines' own counters and the host's GPUs; AIPerf's optional collectors of both (the
        # endpoint's /metrics, a DCGM exporter on this machine) only cost CPU, and under load one that misses its
        # heartbeats is dropped and the whole run reported as degraded (exit 1)
        "--no-server-metrics",
        "--no-gpu-telemetry",
    ]  # fmt: skip
    if recipe.model.source == "hub" and recipe.model.revision:
        args += ["--tokenizer-revision", recipe.model.revision]
    return args


def replay(profile: AgenticProfile, recipe: Recipe, base_url: str, api_key: str, out: Path, console: Console) -> None:
    """Run AIPerf; its log stays beside the results."""
    out.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-c", LAUNCH, *aiperf_args(profile, recipe, base_url, out)]
    (out / "argv.json").write_text(json.dumps(["aiperf", *argv[3:]], indent=2) + "\n")
    limit = profile.timeout_s + 120
    shown = f"AIPerf: {profile.sessions} sessions x {profile.turns} turns"
    # AIPerf leaves its memory-mapped dataset (aiperf_mmap_<id>/) in the system temp folder after every run.
    scratch = tempfile.TemporaryDirectory(prefix="station-aiperf-")
    env = os.environ | {"STATION_ENGINE_KEY": api_key, "AIPERF_DATASET_MMAP_BASE_PATH": scratch.name}
    with scratch, (out / "aiperf.log").open("w") as log, console.status(shown):
        try:
            done = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=limit, check=False)
        except subprocess.TimeoutExpired as exc:
            raise StationError(f"AIPerf did not finish within {limit} s", f"see {out}/aiperf.log") from exc
    if done.returncode != 0 or not (out / "profile_export.jsonl").is_file():
        problem = every_request_failed(out) or f"AIPerf exited with code {done.returncode}"
        raise StationError(problem, f"see {out}/aiperf.log")


def aiperf_records(out: Path) -> list[dict[str, Any]]:
    """AIPerf's per-request records (profile_export.jsonl), one per request it sent."""
    return [json.loads(line) for line in (out / "profile_export.jsonl").read_text().splitlines() if line.strip()]


def every_request_failed(out: Path) -> str | None:
    """What AIPerf's records say when none of its requests succeeded (it then exits 1 without its summary)."""
    records = aiperf_records(out) if (out / "profile_export.jsonl").is_file() else []
    errors = [record["error"] for record in records if record.get("error")]
    if not records or len(errors) < len(records):
        return None
    kinds = sorted({error.get("type") or error.get("message", "error") for error in errors})
    return f"all {len(records)} requests failed ({', '.join(kinds)})"


def percentile(values: list[float], share: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


def value(record: dict[str, Any], name: str) -> float | None:
    """One metric of one AIPerf request record; None where AIPerf did not measure it (a failed request)."""
    metric = (record.get("metrics") or {}).get(name)
    return metric["value"] if metric else None


def summarise(profile: AgenticProfile, out: Path, counted: dict[str, float]) -> AgenticMetrics:
    """AIPerf's per-request records grouped by session and turn, and the engine's counters over the run."""
    records = aiperf_records(out)
    aggregate = json.loads((out / "profile_export_aiperf.json").read_text())
    sessions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        sessions[record["metadata"]["conversation_id"]].append(record)

    failed_records = [r for r in records if r.get("error") or value(r, "request_latency") is None]
    failed_sessions = {r["metadata"]["conversation_id"] for r in failed_records}
    per_session = [
        statistics.fmean(speeds)
        for turns in sessions.values()
        if (speeds := [s for r in turns if (s := value(r, "output_token_throughput_per_user")) is not None])
    ]
    latencies = [v for r in records if (v := value(r, "request_latency")) is not None]
    tpots = [tpot for r in records if (tpot := time_per_output_token(r)) is not None]
    by_turn: dict[int, list[float]] = defaultdict(list)
    for record in records:
        if (ttft := value(record, "time_to_first_token")) is not None:
            by_turn[record["metadata"]["turn_index"]].append(ttft)
    queries = counted["vllm:prefix_cache_queries"]
    latency_ms = aggregate["request_latency"]["avg"]
    expected = len(sessions) * latency_ms / (latency_ms + profile.think_time_ms)
    achieved = aggregate["effective_concurrency"]["avg"]
    return AgenticMetrics(
        sessions=len(sessions),
        sessions_completed=len(sessions) - len(failed_sessions),
        sessions_failed=len(failed_sessions),
        requests=len(records),
        failed=len(failed_records),
        duration_s=aggregate["benchmark_duration"]["avg"],
        output_throughput=aggregate["output_token_throughput"]["avg"],
        per_session_tok_s_p10=percentile(per_session, 0.10),
        per_session_tok_s_p50=percentile(per_session, 0.50),
        turn_latency_p50_ms=percentile(latencies, 0.50),
        turn_latency_p99_ms=percentile(latencies, 0.99),
        p99_ttft_ms=percentile([t for turn in by_turn.values() for t in turn], 0.99),
        p99_tpot_ms=percentile(tpots, 0.99) if tpots else None,
        ttft_p99_by_turn_ms=[percentile(by_turn[turn], 0.99) for turn in sorted(by_turn)],
        achieved_concurrency=achieved,
        expected_concurrency=expected,
        client_bound=achieved < CLIENT_BOUND_SHARE * expected,
        prefix_cache_hit_rate=counted["vllm:prefix_cache_hits"] / queries if queries else None,
        engine_generation_tokens=counted["vllm:generation_tokens"],
    )


def time_per_output_token(record: dict[str, Any]) -> float | None:
    """A request's mean time per output token after the first (vLLM's TPOT); None for one token or a failure."""
    latency, ttft = value(record, "request_latency"), value(record, "time_to_first_token")
    tokens = value(record, "output_sequence_length")
    if latency is None or ttft is None or not tokens or tokens < 2:
        return None
    return (latency - ttft) / (tokens - 1)


def problems(profile: AgenticProfile, metrics: AgenticMetrics) -> list[str]:
    """Why a run is not a valid measurement."""
    found = []
    if metrics.failed:
        found.append(f"{metrics.failed} of {metrics.requests} requests failed")
    if metrics.sessions != profile.sessions:
        found.append(f"{metrics.sessions} sessions ran, the profile asks for {profile.sessions}")
    if metrics.requests != profile.sessions * profile.turns:
        found.append(f"{metrics.requests} requests, the profile asks for {profile.sessions * profile.turns}")
    return found


def measure(
    profile: AgenticProfile, recipe: Recipe, api_url: str, engine_url: str, api_key: str, out: Path, console: Console
) -> AgenticMetrics:
    """The engine's counters, the replay through the router (as clients send it), the counters again: the
    engine's own figures cover exactly the run."""
    before = engine_counters(engine_url, api_key)
    replay(profile, recipe, api_url, api_key, out / "aiperf", console)
    after = engine_counters(engine_url, api_key)
    return summarise(profile, out / "aiperf", {name: after[name] - before[name] for name in COUNTERS})
