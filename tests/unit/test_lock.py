"""One command at a time per host, one image build at a time per controller."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from station import paths
from station.deploy import lock
from station.errors import StationError


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
    assert error.value.problem.endswith(f"by pid {os.getpid()}")


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


def test_a_second_build_waits_for_the_first_to_finish() -> None:
    entered, release, order = threading.Event(), threading.Event(), []

    def first() -> None:
        with lock.builds():
            order.append("first builds")
            entered.set()
            release.wait(10)
            order.append("first done")

    def second() -> None:
        entered.wait(10)
        with lock.builds():
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
