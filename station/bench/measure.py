"""Measurements on a host, recorded with provenance: vLLM's benchmark there (`smoke-bench`), an agentic
profile replayed with AIPerf against its endpoint, and a replay against one of its other engines (a candidate
waiting beside the live one, or a configuration swapped in on trial)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from station.bench import agentic, bench_result, provenance, runs, telemetry
from station.bench import fleet as fleet_bench
from station.bench.agentic import AgenticMetrics
from station.bench.fleet import Fleet
from station.bench.records import FleetFigures, HostFacts, RunRecord
from station.deploy import inventory, keys, playbook, tunnel
from station.recipes import render
from station.recipes.profiles import AgenticProfile
from station.recipes.recipe import Recipe


@dataclass(frozen=True)
class BenchRun:
    run_id: str
    recipe: Recipe
    result: bench_result.BenchResult
    problems: list[str]
    telemetry: telemetry.TelemetrySummary
    record_path: Path
    seconds: float
    fleet: FleetFigures | None = None


def host_facts(out: Path) -> HostFacts:
    """What the bench role read on the host, from the run's folder."""
    return HostFacts.model_validate_json((out / "host.json").read_text())


def bench_role_vars(recipe: Recipe, run_id: str, out: Path, fleet: Fleet | None) -> dict[str, Any]:
    """The bench role's variables: the recipe's, the folder its files come back to, and a fleet's router."""
    extra = render.bench_vars(recipe, run_id) | {"vllm_bench_output_dir": str(out)}
    return extra | fleet_bench.bench_vars(fleet, recipe) if fleet else extra


def smoke_bench(
    host: str, recipe: Recipe, console: Console, context: dict[str, Any] | None = None, fleet: Fleet | None = None
) -> BenchRun:
    """Benchmark the deployed engine, or a `fleet` through its router (`host` is the router's, `recipe` scaled to
    the fleet); `context` (e.g. the ladder and step) is recorded with the result."""
    started, began = time.monotonic(), time.time()
    inventory.host_vars(host)
    run_id = runs.new_id(host, recipe.name)
    out = runs.folder(run_id)
    playbook.run("bench", host, bench_role_vars(recipe, run_id, out, fleet), console)
    result = bench_result.parse(out / "bench.json")
    problems = bench_result.problems(result, recipe.bench)
    gpu_telemetry = telemetry.summarise(
        telemetry.load(out / "telemetry.json"), result.total_output_tokens, result.duration
    )
    record = RunRecord(
        run_id=run_id,
        kind="ladder-step" if context else "smoke-bench",
        context=context or {},
        profile=recipe.bench.model_dump(),
        metrics=result,
        problems=problems,
        telemetry=gpu_telemetry,
        reference=recipe.reference.model_dump() if recipe.reference else None,
        fleet=fleet_bench.figures(fleet, recipe, began, console) if fleet else None,
        provenance=provenance.record(recipe, host, host_facts(out)),
    )
    path = runs.write(record)
    return BenchRun(run_id, recipe, result, problems, gpu_telemetry, path, time.monotonic() - started, record.fleet)


@dataclass(frozen=True)
class AgenticRun:
    run_id: str
    recipe: Recipe
    profile: AgenticProfile
    metrics: agentic.AgenticMetrics
    problems: list[str]
    record_path: Path
    seconds: float
    fleet: FleetFigures | None = None


def agentic_bench(
    host: str, recipe: Recipe, profile: AgenticProfile, console: Console, fleet: Fleet | None = None
) -> AgenticRun:
    """Replay an agentic profile against the deployed engine with AIPerf on this machine, through the host's
    router (a `fleet`'s, on its router's host); record it like a bench."""
    started, began = time.monotonic(), time.time()
    profile.require_fits(recipe)
    key = keys.api_key(host)
    run_id = runs.new_id(host, f"{recipe.name}-{profile.name}")
    out = runs.folder(run_id)
    playbook.run("facts", host, bench_role_vars(recipe, run_id, out, fleet), console)
    with tunnel.urls(host, console, (tunnel.API, tunnel.ENGINE)) as found:
        api, engine = found[tunnel.API], found[tunnel.ENGINE]
        metrics = agentic.measure(profile, recipe, api, engine, key, out, console)
        client = {"tool": "aiperf", "version": agentic.AIPERF_VERSION, "on": "controller", "endpoint": api}
    served = fleet_bench.figures(fleet, recipe, began, console) if fleet else None
    if served:  # the engine counters read were the router host's only: the fleet's are every host's
        metrics = metrics.model_copy(update=fleet_bench.engine_figures(served))
    problems = agentic.problems(profile, metrics)
    record = RunRecord(
        run_id=run_id,
        kind="agentic",
        context={"profile": profile.name},
        profile=profile.model_dump(),
        client=client,
        metrics=metrics,
        problems=problems,
        reference={"per_user_tok_s": profile.per_user_target_tok_s} if profile.per_user_target_tok_s else None,
        fleet=served,
        provenance=provenance.record(recipe, host, host_facts(out)),
    )
    path = runs.write(record)
    return AgenticRun(run_id, recipe, profile, metrics, problems, path, time.monotonic() - started, record.fleet)


def replay(
    host: str, profile: AgenticProfile, recipe: Recipe, out: Path, console: Console, service: str = tunnel.CANDIDATE
) -> AgenticMetrics:
    """The profile replayed against the waiting candidate directly (an SSH forward to its port where remote), or
    against another of the host's engine `service`s (the live engine, swapped in on trial)."""
    with tunnel.urls(host, console, (service,)) as found:
        url = found[service]
        return agentic.measure(profile, recipe, url, url, keys.api_key(host), out, console)
