"""One command at a time per host, one image build at a time per controller."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from station import paths
from station.deploy import lock
from station.errors import StationError
from tests.conftest import ansible_module


@pytest.fixture(autouse=True)
def own_state(tmp_path, monkeypatch) -> None:
    """Locks of this test's own: the suite's other worker shares the controller state."""
    monkeypatch.setattr(paths, "STATE", tmp_path)
    monkeypatch.setenv("STATION_STATE_DIR", str(tmp_path))


def test_a_second_holder_is_refused_naming_the_first() -> None:
    with (
        lock.host("dgx-lock-test", "deploy"),
        pytest.raises(StationError) as error,
        lock.host("dgx-lock-test", "smoke-bench"),
    ):
        pass
    assert error.value.problem.startswith("dgx-lock-test is busy: invoke deploy started at ")
    assert error.value.problem.endswith(f"by pid {os.getpid()} on {socket.gethostname()}")


def test_the_lock_is_released_after_the_command() -> None:
    with lock.host("dgx-lock-test", "deploy"):
        pass
    with lock.host("dgx-lock-test", "down"):
        pass


def test_other_hosts_are_not_blocked() -> None:
    with lock.host("dgx-lock-a", "deploy"), lock.host("dgx-lock-b", "deploy"):
        pass


def test_a_process_that_dies_leaves_no_lock_behind() -> None:
    code = "from station.deploy import lock\nwith lock.host('dgx-lock-crash', 'deploy'):\n    raise SystemExit(9)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 9
    with lock.host("dgx-lock-crash", "deploy"):
        pass


def test_a_second_build_of_an_image_waits_for_the_first_to_finish() -> None:
    entered, release, order = threading.Event(), threading.Event(), []

    def first() -> None:
        with lock.builds("station.invalid/engine:1"):
            order.append("first builds")
            entered.set()
            release.wait(10)
            order.append("first done")

    def second() -> None:
        entered.wait(10)
        with lock.builds("station.invalid/engine:1"):
            order.append("second builds")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    entered.wait(10)
    time.sleep(0.5)  # the second has had the time to enter, were it not held back
    assert order == ["first builds"]
    release.set()
    for thread in threads:
        thread.join(10)
    assert order == ["first builds", "first done", "second builds"]


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(lambda: lock.builds("station.invalid/router:1"), id="another image's build"),
        # A host building its own images takes the wheel lock only: it waits for no build here, nor another host's
        pytest.param(lock.wheels, id="the wheel cache"),
    ],
)
def test_a_build_on_this_controller_s_engine_holds_back_only_its_own_image(other) -> None:
    taken = threading.Event()

    def take() -> None:
        with other():
            taken.set()

    with lock.builds("station.invalid/engine:1"):
        thread = threading.Thread(target=take)
        thread.start()
        assert taken.wait(5)
    thread.join(5)


def _host_side():
    return ansible_module("library/station_lock.py")


def _claim(command: str, **fields: object) -> dict[str, object]:
    with lock.host(f"dgx-claim-{command}", command) as holder:
        return holder.claim() | fields


def test_the_host_refuses_another_controllers_command_and_keeps_its_claim(tmp_path) -> None:
    host_side, path = _host_side(), str(tmp_path / "station" / "station.lock")
    first, second = _claim("deploy"), _claim("smoke-bench", controller="laptop-b")
    assert host_side.take(path, first) == {"busy": False, "held_by": None}
    refused = host_side.take(path, second)
    assert refused == {"busy": True, "held_by": first}
    assert host_side.describe(refused["held_by"]) == lock.describe(first)  # the host says it as the controller does
    assert json.loads((tmp_path / "station" / "station.lock").read_text()) == first


def test_a_commands_later_playbooks_find_the_lock_theirs_and_its_end_frees_it(tmp_path) -> None:
    host_side, path = _host_side(), str(tmp_path / "station.lock")
    claim = _claim("deploy")
    host_side.take(path, claim)
    assert host_side.take(path, claim) == {"busy": False, "held_by": claim}
    assert host_side.free(path, _claim("down", controller="laptop-b")) == {"busy": False, "held_by": claim}
    assert json.loads((tmp_path / "station.lock").read_text()) == claim  # another's free leaves it
    host_side.free(path, claim)
    assert (tmp_path / "station.lock").read_text() == ""
    assert host_side.take(path, _claim("down", controller="laptop-b"))["busy"] is False


def test_a_claim_this_controller_left_is_taken_over_and_a_forced_free_frees_any(tmp_path) -> None:
    host_side, path = _host_side(), str(tmp_path / "station.lock")
    left = _claim("ladder", pid=1)  # same machine and state folder, another command: it has ended
    host_side.take(path, left)
    ours = _claim("deploy")
    assert host_side.take(path, ours) == {"busy": False, "held_by": left}
    assert host_side.free(path, _claim("unlock", controller="laptop-b"), force=True)["held_by"] == ours
    assert (tmp_path / "station.lock").read_text() == ""
