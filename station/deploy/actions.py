"""What the invoke tasks do to a host: deploy (a new configuration proven beside the live engine, or swapped
in place), provision, check a recipe's flags there, status, down, and what coding agents send, tried."""

from __future__ import annotations

import functools
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from station import paths
from station.deploy import agent_check, candidate, delivery, inventory, keys, lock, playbook, tunnel
from station.deploy.host_status import ContainerStatus, HostStatus
from station.errors import StationError
from station.recipes import fit, render
from station.recipes.recipe import Recipe


@dataclass(frozen=True)
class Deployment:
    host: str
    recipe: Recipe
    endpoint: str
    api_key_file: Path
    prometheus_url: str
    grafana_url: str | None
    grafana_password_file: Path
    changed_tasks: list[str]
    agent_checks: list[agent_check.Check]
    seconds: float
    took_over: bool = False  # a candidate proved itself beside the live engine and took its traffic
    # A live engine replaced in place: seconds the router held requests (at most hold_s each) while none served
    in_place_window_s: float | None = None
    hold_s: int | None = None


AgentGate = Callable[[list[agent_check.Check]], None]


# A check of the candidate waiting beside the live engine (host, the recipe it runs); raises StationError to refuse it.
CandidateGate = Callable[[str, Recipe, Console], None]


def deploy(
    host: str,
    recipe: Recipe,
    console: Console,
    agent_gate: AgentGate | None = None,
    in_place: bool = False,
    gates: Sequence[CandidateGate] = (),
    require_beside: bool = False,
    on_trial: bool = False,
) -> Deployment:
    """The recipe's engine and monitoring on the host, then what agents send tried against it.

    The engine's arguments are checked on the host first by vLLM's own parser. `agent_gate` judges what
    coding agents send (it raises to refuse): a new configuration that starts beside the live engine is
    judged there before it takes any traffic, after its health check and before `gates` (invoke promote's
    canary and accuracy gate), and the endpoint is judged again through the router. Without a gate nothing
    is tried. `in_place` replaces the engine in its own container (a drain-and-swap: the router holds new
    requests while the old engine finishes its own and the new one starts; the last healthy one is restored
    on failure) rather than proving it beside the live one: for hosts without room for two engines (GPU
    engines get it by default), and for runs that own the engine to measure one configuration after another
    (ladder, accuracy), where proving each beside would start it twice. `require_beside` refuses, before
    anything changes, a new configuration that cannot start beside the live engine (invoke promote: its
    gates need the live engine serving). `on_trial` (with `in_place`) leaves the replaced configuration recorded as
    the last healthy one, for gates run afterwards (candidate.keep or candidate.restore).
    """
    started = time.monotonic()
    host_vars = inventory.host_vars(host)
    render.require_pinned_remote_code(recipe)
    delivery_vars = delivery.prepare_images(host, recipe, console)
    on_candidate = [functools.partial(_agents_on_candidate, agent_gate=agent_gate)] if agent_gate else []
    on_candidate += gates
    switch = {"vllm_server_switch": "in_place"} if in_place else {}
    hold = {
        "vllm_server_candidate_hold": bool(on_candidate),
        "vllm_server_require_beside": require_beside,
        "vllm_server_on_trial": on_trial,
    }
    result = playbook.run("deploy", host, render.engine_vars(recipe) | delivery_vars | switch | hold, console)
    changed = list(result.changed_tasks)
    waiting = candidate.held(result, host)
    if waiting:
        changed += _prove_candidate(host, recipe, waiting, on_candidate, console)
    checks = []
    if agent_gate:
        checks = check_agents(host, recipe, console)
        agent_gate(checks)
    return Deployment(
        host=host,
        recipe=recipe,
        endpoint=f"{service_url(host_vars, 'vllm_router')}/v1",
        api_key_file=keys.api_key_file(host),
        prometheus_url=service_url(host_vars, "prometheus"),
        grafana_url=grafana_url(host_vars),
        grafana_password_file=paths.SECRETS / host / "grafana_admin_password",
        changed_tasks=changed,
        agent_checks=checks,
        seconds=time.monotonic() - started,
        took_over=bool(waiting),
        in_place_window_s=result.handed_by(host, "vllm_server_in_place_window_s"),
        hold_s=inventory.setting(host_vars, "vllm_router", "vllm_router_hold_s"),
    )


def _agents_on_candidate(host: str, recipe: Recipe, console: Console, agent_gate: AgentGate) -> None:
    agent_gate(check_agents(host, recipe, console, tunnel.CANDIDATE))


def _prove_candidate(
    host: str, recipe: Recipe, waiting: dict[str, Any], gates: Sequence[CandidateGate], console: Console
) -> list[str]:
    """Every gate, on the candidate waiting beside the live engine: it takes the traffic if all pass (the
    takeover's changes are returned), and is removed, the live engine untouched, at the first that refuses."""
    try:
        for gate in gates:
            gate(host, recipe, console)
    except StationError as refused:
        candidate.remove(host, console)
        raise StationError(
            f"{refused.problem}\nThe candidate was removed; the live engine (recipe {waiting['live_recipe']}) "
            "was not touched and is serving.",
            refused.hint,
        ) from refused
    except BaseException:  # a gate that broke, or an interrupt: the candidate never stays behind
        candidate.remove(host, console)
        raise
    return candidate.takeover(host, recipe, console).changed_tasks


def check_agents(host: str, recipe: Recipe, console: Console, service: str = tunnel.API) -> list[agent_check.Check]:
    """What a coding agent sends, against the deployed endpoint (or another of the host's `service`s) as this
    machine reaches it (SSH forward if remote)."""
    key = keys.api_key(host)
    reasoning = "reasoning-parser" in recipe.engine.args
    with tunnel.urls(host, console, (service,)) as found:
        url = f"{found[service]}/v1"
        with console.status(f"Trying what agents send against {url}"):
            endpoint = agent_check.Endpoint(url, key, recipe.model.served_name, reasoning, recipe.model.reads_images)
            return agent_check.run(endpoint)


def service_url(host_vars: dict[str, Any], role: str) -> str:
    """Where a role's service answers on its host: its <role>_bind_address and <role>_port, as the host gets them."""
    address, port = (inventory.setting(host_vars, role, f"{role}_{name}") for name in ("bind_address", "port"))
    return f"http://{address}:{port}"


def grafana_url(host_vars: dict[str, Any]) -> str | None:
    """Where Grafana answers; None where this host gets no Grafana image."""
    return service_url(host_vars, "grafana") if inventory.setting(host_vars, "grafana", "grafana_image") else None


@dataclass(frozen=True)
class Provisioning:
    host: str
    changed_tasks: list[str]
    seconds: float


def provision_vars(recipe: Recipe | None) -> dict[str, Any]:
    """What a recipe adds to provisioning: its GPU memory need, and its engine image to prove the GPU runtime."""
    if recipe is None or not recipe.engine.container.gpus:
        return {}
    return {
        "preflight_min_gpu_memory_gib": fit.needed_gib(recipe),
        "nvidia_container_toolkit_verify_image": recipe.engine.image,
    }


def provision(host: str, recipe: Recipe | None, tags: str, console: Console) -> Provisioning:
    started = time.monotonic()
    inventory.host_vars(host)
    result = playbook.run("provision", host, provision_vars(recipe), console, tags)
    return Provisioning(host, result.changed_tasks, time.monotonic() - started)


def check_args(host: str, labelled: list[tuple[str, Recipe]], console: Console) -> None:
    """Every recipe's engine argv through vLLM's own parser, inside its pinned image on the host; changes nothing."""
    representatives = {recipe.engine.image: recipe for _, recipe in labelled}  # one recipe per image
    for image, recipe in representatives.items():
        checks = [{"label": label, "argv": render.serve_argv(r)} for label, r in labelled if r.engine.image == image]
        extra = render.engine_vars(recipe) | delivery.prepare_images(host, recipe, console)
        playbook.run("check", host, extra | {"vllm_server_arg_checks": checks}, console)


def status(host: str, console: Console, roles: list[str] | None = None) -> HostStatus:
    inventory.host_vars(host)
    found, failed = statuses([host], console, roles)
    if failed:
        raise failed[host]
    return found[0]


def statuses(
    hosts: list[str], console: Console, roles: list[str] | None = None
) -> tuple[list[HostStatus], dict[str, StationError]]:
    """Every host's status, asked of all at once; a host that cannot answer is in the second part, with why.
    `roles` asks only those roles for what they run (all of station's by default)."""
    only = {"station_status_roles": roles} if roles else {}
    with tempfile.TemporaryDirectory(prefix="station-status-") as out:
        failed = playbook.run_on_each("status", hosts, {"station_output_dir": out} | only, console)
        answered = [host for host in hosts if host not in failed]
        return [HostStatus.model_validate_json((Path(out) / f"{host}.json").read_text()) for host in answered], failed


def down(host: str, console: Console) -> playbook.PlaybookResult:
    inventory.host_vars(host)
    return playbook.run("down", host, {}, console)


@contextmanager
def holding(host: str, command: str, console: Console) -> Iterator[lock.Holder]:
    """The host's lock while one command runs: this controller's, and the host's own claim its playbooks take, which
    is freed however the command ends."""
    with lock.host(host, command) as holder:
        try:
            yield holder
        finally:
            release_lock(host, holder, console)


def release_lock(host: str, holder: lock.Holder, console: Console) -> None:
    """Free the host's side of the lock the command took; a failure to is said, never raised over the command's own
    outcome."""
    if not holder.taken_on_host:
        return
    try:
        playbook.run("unlock", host, {}, console)
    except StationError as error:
        console.print(f"[yellow]warning:[/] {host}'s lock stays taken: {error.problem}", highlight=False)
        console.print(f"  → {playbook.UNLOCK_HINT.format(host=host)}", highlight=False)


def unlock(host: str, console: Console) -> dict[str, Any] | None:
    """Free the host's lock whoever holds it (a command whose controller died); who held it, or None."""
    inventory.host_vars(host)
    result = playbook.run("unlock", host, {"station_lock_force": True}, console)
    return result.handed_by(host, "station_lock_held_by")


def live_engine(host: str, console: Console) -> ContainerStatus:
    """The live engine's container as status reports it (recipe, config, state), or a clear error when none runs."""
    name = inventory.setting(inventory.host_vars(host), "vllm_server", "vllm_server_container_name")
    engine = status(host, console, roles=["vllm_server"]).container(name)
    if engine is None or not engine.running:
        raise StationError(f"no engine runs on {host}", f"deploy one first: invoke deploy --host {host}")
    return engine
