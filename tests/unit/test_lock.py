"""One command at a time per host."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from station.deploy import lock
from station.errors import StationError


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
