"""The engine beside the live one, in the candidate's container, driven from the controller.

A deploy that replaces a healthy engine leaves its candidate waiting there
once it serves, so that what coding agents send is tried on it before it
takes any traffic; `invoke tune` starts each trial there as a held-back
engine the router never sends to; `invoke promote --in-place` keeps, or
swaps back out, a configuration swapped in on trial. Ansible does the work (the vllm_server
role's `candidate` entry point); this module says which step, and where the
candidate answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console

from station.deploy import inventory, playbook
from station.deploy.playbook import PlaybookResult
from station.recipes import render
from station.recipes.recipe import Recipe


def bench_target(host: str) -> dict[str, Any]:
    """The vllm_bench role's engine variables for the candidate: probes and replays run on the host reach it."""
    live = inventory.setting(inventory.host_vars(host), "vllm_server", "vllm_server_container_name")
    name = f"{live}-candidate"
    url = f"http://{name}:{render.ENGINE_CONTAINER_PORT}"
    return {"vllm_bench_engine_container": name, "vllm_bench_target_url": url}


def held(result: PlaybookResult, host: str) -> dict[str, Any] | None:
    """What a deploy said about the candidate it left waiting beside the live engine, or None if it left none."""
    return result.handed_by(host, "vllm_server_candidate_held")


def start(host: str, recipe: Recipe, console: Console) -> PlaybookResult:
    """The recipe's engine as a held-back candidate, checked like any engine; the router never sends to it."""
    render.require_pinned_remote_code(recipe)  # a tune space may add trust-remote-code to what deploy checked
    return _drive(host, "start", console, render.engine_vars(recipe))


def takeover(host: str, recipe: Recipe, console: Console) -> PlaybookResult:
    """The waiting candidate (running `recipe`) takes the traffic; the live engine drains first, no request fails."""
    return _drive(host, "takeover", console, render.engine_vars(recipe))


def keep(host: str, recipe: Recipe, console: Console) -> PlaybookResult:
    """The configuration swapped in on trial (`recipe`) passed its gates: it becomes the last healthy one."""
    return _drive(host, "keep", console, render.engine_vars(recipe))


def restore(host: str, console: Console) -> PlaybookResult:
    """A gate refused the configuration swapped in on trial: the last healthy one is swapped back in."""
    return _drive(host, "restore", console, {})


def remove(host: str, console: Console) -> PlaybookResult:
    """The candidate out of the router, where it is there, and removed; the live engine is untouched."""
    return _drive(host, "remove", console, {})


@contextmanager
def held_back(host: str, console: Console) -> Iterator[Callable[[Recipe], None]]:
    """A place beside the live engine for as long as the block runs: each recipe given to the function it yields is
    started there in place of the one it held (one playbook, where removing it first took another), and whatever it
    holds is removed however the block ends. A recipe that fails to start is removed by the role, and raises."""
    used = False

    def hold(recipe: Recipe) -> None:
        nonlocal used
        used = True
        start(host, recipe, console)

    try:
        yield hold
    finally:
        if used:
            remove(host, console)


def _drive(host: str, action: str, console: Console, engine_vars: dict[str, Any]) -> PlaybookResult:
    return playbook.run("candidate", host, engine_vars | {"vllm_server_candidate_action": action}, console)
