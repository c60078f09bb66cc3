"""station_container_wait's conditions: when a wait for an engine's start, or a benchmark's end, is over."""

from __future__ import annotations

import pytest

from tests.conftest import ansible_module


def _module():
    return ansible_module("library/station_container_wait.py")


def container(running: bool = True, health: str | None = None, restarts: int = 0) -> dict:
    state = {"Running": running, "Status": "running" if running else "exited"} | (
        {"Health": {"Status": health}} if health else {}
    )
    return {"State": state, "RestartCount": restarts}


@pytest.mark.parametrize(
    ("found", "over"),
    [
        (container(health="starting"), False),
        (container(health="healthy"), True),
        (container(health="unhealthy"), True),  # its health check gave up: the assert after the wait says so
        (container(running=False, health="starting"), True),  # crashed while starting
        (container(health="starting", restarts=1), True),  # crashed and was restarted by its policy
        (container(), False),  # no health check: running says nothing
    ],
)
def test_an_engine_start_has_settled_at_a_verdict_a_stop_or_a_restart(found: dict, over: bool) -> None:
    assert _module().settled(found) is over


def test_a_benchmark_is_over_when_its_container_stops() -> None:
    module = _module()
    assert not module.stopped(container()) and module.stopped(container(running=False))
