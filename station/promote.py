"""invoke promote: a new configuration proves itself beside the live engine, gate by gate, then takes the traffic.

The candidate starts beside the live engine as `deploy` starts it, and waits
there, the router untouched, while station runs the gates against it:

    health        the role: healthy, the recipe's model, the pinned vLLM version
    agent-check   what coding agents send (station.agent_check)
    accuracy      fixed prompts at temperature 0, its answers against the live engine's:
                  drift beyond the thresholds refuses it (a change of numerics must earn its place)
    canary        an agentic profile replayed against it: every request served

The first gate that refuses removes the candidate; the live engine, its
container and the router stay as they were. When every gate passes, the
router moves the traffic to it and the live engine drains: no request fails.
Each gate's evidence is kept in results/promotions/<id>/.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from station import accuracy, actions, agentic, candidate, inventory, paths, render
from station.errors import StationError
from station.profiles import AgenticProfile
from station.recipe import Recipe

PROMOTIONS = paths.RESULTS / "promotions"


@dataclass
class Evidence:
    """What the gates measured on the candidate (None where a gate did not get to run)."""

    folder: Path
    canary: agentic.AgenticMetrics | None = None
    drift: accuracy.Drift | None = None


def canary_gate(profile: AgenticProfile, evidence: Evidence) -> actions.CandidateGate:
    """The profile replayed against the candidate directly: a failed request or an incomplete replay refuses it."""

    def gate(host: str, recipe: Recipe, console: Console) -> None:
        profile.require_fits(recipe)
        out = evidence.folder / "canary"
        evidence.canary = candidate.replay(host, profile, recipe, out, console)
        (out / "metrics.json").write_text(evidence.canary.model_dump_json(indent=2) + "\n")
        problems = agentic.problems(profile, evidence.canary)
        if problems:
            raise StationError(
                f"the canary replay of {profile.name} on the candidate failed: {'; '.join(problems)}",
                f"see {out}",
            )

    return gate


def accuracy_gate(live_config: str, thresholds: accuracy.Thresholds, evidence: Evidence) -> actions.CandidateGate:
    """The live engine's answers and the candidate's to the same fixed prompts: drift beyond the thresholds refuses."""

    def gate(host: str, recipe: Recipe, console: Console) -> None:
        live = accuracy.probe(
            host, recipe, evidence.folder / "probe-live", console, {"vllm_bench_config_hash": live_config}
        )
        tried = accuracy.probe(host, recipe, evidence.folder / "probe-candidate", console, candidate.bench_target(host))
        evidence.drift = accuracy.compare(live, tried)
        found = accuracy.problems(evidence.drift, thresholds)
        record = {"drift": evidence.drift.model_dump(), "problems": found, "thresholds": thresholds.__dict__}
        (evidence.folder / "drift.json").write_text(json.dumps(record, indent=2) + "\n")
        if found:
            raise StationError(
                f"the candidate's answers drift from the live engine's: {'; '.join(found)}",
                f"details: {evidence.folder / 'drift.json'}; promote it anyway with --no-accuracy-gate",
            )

    return gate


def run(
    host: str,
    recipe: Recipe,
    canary: AgenticProfile,
    thresholds: accuracy.Thresholds | None,
    agent_gate: actions.AgentGate,
    console: Console,
) -> tuple[actions.Deployment, Evidence]:
    """The candidate through every gate, then the traffic moved to it; without thresholds, no accuracy gate."""
    inventory.host_vars(host)
    canary.require_fits(recipe)
    live = actions.live_engine(host, console)
    if live.get("config") == render.config_hash(recipe):
        raise StationError(f"{host} already runs {recipe.name} (configuration {live['config']})", "nothing to promote")
    evidence = Evidence(PROMOTIONS / f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{host}-{recipe.name}")
    evidence.folder.mkdir(parents=True)
    # Cheapest first: a candidate is refused as early as it can be.
    gates = [accuracy_gate(live["config"], thresholds, evidence)] if thresholds else []
    gates.append(canary_gate(canary, evidence))
    done = actions.deploy(host, recipe, console, agent_gate, gates=gates, require_beside=True)
    (evidence.folder / "promotion.json").write_text(json.dumps(record(done, live, evidence), indent=2) + "\n")
    return done, evidence


def record(done: actions.Deployment, live: dict[str, Any], evidence: Evidence) -> dict[str, Any]:
    return {
        "host": done.host,
        "recipe": done.recipe.name,
        "config_hash": render.config_hash(done.recipe),
        "replaced": {"recipe": live.get("recipe"), "config_hash": live.get("config")},
        "gates": ["health", "agent-check", *(["accuracy"] if evidence.drift else []), "canary"],
        "canary": evidence.canary.model_dump() if evidence.canary else None,
        "drift": evidence.drift.model_dump() if evidence.drift else None,
        "seconds": done.seconds,
        "promoted": datetime.now(UTC).isoformat(timespec="seconds"),
    }
