"""invoke promote: a new configuration proves itself gate by gate, beside the live engine, before it takes the traffic.

The candidate starts beside the live engine as `deploy` starts it, and waits
there, the router untouched, while station runs the gates against it:

    health        the role: healthy, the recipe's model, the pinned vLLM version
    agent-check   what coding agents send (station.agent_check)
    accuracy      fixed prompts at temperature 0, its answers against the live engine's (asked first):
                  drift beyond the thresholds refuses it (a change of numerics must earn its place)
    canary        an agentic profile replayed against it: every request served

The first gate that refuses removes the candidate; the live engine, its
container and the router stay as they were. When every gate passes, the
router moves the traffic to it and the live engine drains: no request fails.

Where two engines do not fit (one GPU the model fills), `--in-place` swaps
the new configuration in on trial instead (the engine drains, the router
holds requests while it restarts), runs the same gates against it there, and
swaps the last healthy configuration back in if one refuses: it served
traffic meanwhile, which the error says. Each gate's evidence is kept in
results/promotions/<id>/.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console

from station import paths
from station.bench import accuracy, agentic, measure
from station.deploy import actions, candidate, inventory, tunnel
from station.deploy.host_status import ContainerStatus
from station.errors import StationError
from station.recipes import render
from station.recipes.profiles import AgenticProfile
from station.recipes.recipe import Recipe

PROMOTIONS = paths.RESULTS / "promotions"


@dataclass
class Evidence:
    """What the gates measured on the candidate (None where a gate did not get to run)."""

    folder: Path
    in_place: bool = False  # swapped in on trial rather than proven beside the live engine
    canary: agentic.AgenticMetrics | None = None
    drift: accuracy.Drift | None = None


def canary_gate(profile: AgenticProfile, service: str, evidence: Evidence) -> actions.CandidateGate:
    """The profile replayed against the engine on trial (the host's `service`) directly: a failed request or an
    incomplete replay refuses it."""

    def gate(host: str, recipe: Recipe, console: Console) -> None:
        profile.require_fits(recipe)
        out = evidence.folder / "canary"
        refused = f"the canary replay of {profile.name} on the candidate failed"
        try:
            evidence.canary = measure.replay(host, profile, recipe, out, console, service)
        except StationError as exc:
            raise StationError(f"{refused}: {exc.problem}", exc.hint) from exc
        (out / "metrics.json").write_text(evidence.canary.model_dump_json(indent=2) + "\n")
        problems = agentic.problems(profile, evidence.canary)
        if problems:
            raise StationError(f"{refused}: {'; '.join(problems)}", f"see {out}")

    return gate


def accuracy_gate(
    live: list[dict[str, Any]], target: dict[str, Any], thresholds: accuracy.Thresholds, evidence: Evidence
) -> actions.CandidateGate:
    """The live engine's answers to fixed prompts (`live`) and those of the engine on trial (the vllm_bench role's
    `target` variables): drift beyond the thresholds refuses it."""

    def gate(host: str, recipe: Recipe, console: Console) -> None:
        tried = accuracy.probe(host, recipe, evidence.folder / "probe-candidate", console, target)
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
    in_place: bool = False,
) -> tuple[actions.Deployment, Evidence]:
    """The candidate through every gate, then the traffic moved to it; without thresholds, no accuracy gate.
    `in_place` swaps it in on trial and back out if a gate refuses (hosts without room for two engines)."""
    inventory.host_vars(host)
    canary.require_fits(recipe)
    live = actions.live_engine(host, console)
    if live.config == render.config_hash(recipe):
        raise StationError(f"{host} already runs {recipe.name} (configuration {live.config})", "nothing to promote")
    evidence = Evidence(PROMOTIONS / f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{host}-{recipe.name}", in_place=in_place)
    evidence.folder.mkdir(parents=True)
    reference = live_answers(host, recipe, live, evidence, console) if thresholds else None
    target, service = ({}, tunnel.ENGINE) if in_place else (candidate.bench_target(host), tunnel.CANDIDATE)
    # Cheapest first: a candidate is refused as early as it can be.
    gates = [accuracy_gate(reference, target, thresholds, evidence)] if thresholds else []
    gates.append(canary_gate(canary, service, evidence))
    if in_place:
        done = swap_on_trial(host, recipe, live, [agents_gate(agent_gate), *gates], console)
    else:
        done = actions.deploy(host, recipe, console, agent_gate, gates=gates, require_beside=True)
    (evidence.folder / "promotion.json").write_text(json.dumps(record(done, live, evidence), indent=2) + "\n")
    return done, evidence


def live_answers(
    host: str, recipe: Recipe, live: ContainerStatus, evidence: Evidence, console: Console
) -> list[dict[str, Any]]:
    """The live engine's answers to the accuracy gate's prompts, asked before anything changes."""
    return accuracy.probe(
        host, recipe, evidence.folder / "probe-live", console, {"vllm_bench_config_hash": live.config}
    )


def agents_gate(agent_gate: actions.AgentGate) -> actions.CandidateGate:
    """agent-check against the engine on trial, through the router (swapped in place, it takes the traffic)."""

    def gate(host: str, recipe: Recipe, console: Console) -> None:
        agent_gate(actions.check_agents(host, recipe, console))

    return gate


def swap_on_trial(
    host: str, recipe: Recipe, live: ContainerStatus, gates: list[actions.CandidateGate], console: Console
) -> actions.Deployment:
    """The recipe swapped in place, then the gates; the first that refuses (or an interrupt) swaps the last
    healthy configuration back in. An engine that cannot start is swapped back by the deploy itself."""
    done = actions.deploy(host, recipe, console, in_place=True, on_trial=True)
    on_trial_since = time.monotonic()
    try:
        for gate in gates:
            gate(host, recipe, console)
    except StationError as refused:
        served_s = time.monotonic() - on_trial_since
        held = candidate.restore(host, console).handed_by(host, "vllm_server_in_place_window_s")
        raise StationError(
            f"{refused.problem}. {recipe.name} served the traffic for {served_s:.0f} s on trial and was swapped "
            f"back out: {live.recipe} serves again (the router held requests for up to {held} s meanwhile)",
            refused.hint,
        ) from refused
    except BaseException:
        candidate.restore(host, console)
        raise
    candidate.keep(host, recipe, console)
    return done


def record(done: actions.Deployment, live: ContainerStatus, evidence: Evidence) -> dict[str, Any]:
    return {
        "host": done.host,
        "recipe": done.recipe.name,
        "config_hash": render.config_hash(done.recipe),
        "replaced": {"recipe": live.recipe, "config_hash": live.config},
        "gates": ["health", "agent-check", *(["accuracy"] if evidence.drift else []), "canary"],
        "in_place": evidence.in_place,
        "held_s": done.in_place_window_s,
        "canary": evidence.canary.model_dump() if evidence.canary else None,
        "drift": evidence.drift.model_dump() if evidence.drift else None,
        "seconds": done.seconds,
        "promoted": datetime.now(UTC).isoformat(timespec="seconds"),
    }
