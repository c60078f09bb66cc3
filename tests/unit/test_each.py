"""A command on every host of a fleet at once: each host's output apart, its own lock, and one failing host named
while the others complete."""

from __future__ import annotations

import _thread
import io
import signal
import subprocess
import sys
import threading
import time

import pytest
from rich.console import Console

from station import paths
from station.deploy import lock, playbook
from station.errors import StationError
from station.fleet import each
from tests.conftest import host_section

HOSTS = ["dgx-each-a", "dgx-each-b", "dgx-each-c"]


@pytest.fixture(autouse=True)
def own_state(tmp_path, monkeypatch) -> None:
    """Locks of this test's own: the suite's other worker shares the controller state."""
    monkeypatch.setattr(paths, "STATE", tmp_path)


def shown() -> Console:
    return Console(file=io.StringIO(), width=120)


def test_every_host_runs_at_once_and_its_output_is_shown_under_its_name() -> None:
    together = threading.Barrier(len(HOSTS), timeout=10)  # broken (and the work failed) unless all run at once

    def work(host: str, out: Console) -> None:
        together.wait()
        out.print(f"deployed on {host}, holding {lock.held(host).command}")

    console = shown()
    each.run(HOSTS, "deploy", work, console)
    text = console.file.getvalue()
    for host in HOSTS:
        assert f"deployed on {host}, holding deploy" in host_section(text, "deploy", host)
        assert lock.held(host) is None  # released when its work ended


def test_a_failing_host_is_named_and_the_others_complete() -> None:
    done: list[str] = []

    def work(host: str, out: Console) -> None:
        if host == "dgx-each-b":
            raise StationError("dgx-each-b is unreachable: refused", "check ansible_host")
        done.append(host)

    console = shown()
    with pytest.raises(StationError) as error:
        each.run(HOSTS, "deploy", work, console)
    assert sorted(done) == ["dgx-each-a", "dgx-each-c"]
    assert error.value.problem == "deploy failed on dgx-each-b:\ndgx-each-b is unreachable: refused"
    assert error.value.hint == "check ansible_host"
    section = host_section(console.file.getvalue(), "deploy", "dgx-each-b")
    assert "error: dgx-each-b is unreachable: refused" in section and "→ check ansible_host" in section


def test_a_host_another_command_holds_is_refused_and_the_others_run() -> None:
    ran: list[str] = []
    with lock.host("dgx-each-a", "smoke-bench"), pytest.raises(StationError) as error:
        each.run(HOSTS, "down", lambda host, out: ran.append(host), shown())
    assert sorted(ran) == ["dgx-each-b", "dgx-each-c"]
    assert error.value.problem.startswith("down failed on dgx-each-a:\ndgx-each-a is busy: invoke smoke-bench")


def test_an_unlocked_command_runs_on_a_host_another_command_holds() -> None:
    ran: list[str] = []
    with lock.host("dgx-each-a", "deploy"):
        each.run(HOSTS, "agent-check", lambda host, out: ran.append(host), shown(), locked=False)
    assert sorted(ran) == HOSTS


def test_the_fleet_spinner_says_what_each_running_host_is_doing() -> None:
    """What a host's playbook would show on its spinner is on the fleet's board until the host ends."""
    started, seen = threading.Barrier(len(HOSTS), timeout=10), threading.Event()
    boards: list[str] = []

    def work(host: str, out: Console) -> None:
        with out.status("Starting Ansible") as status:
            status.update(f"Wait until the engine on {host} reports healthy")
            started.wait()
            if host == HOSTS[0]:
                boards.append(each._said("deploy", dict(status.board)))
                seen.set()
            seen.wait(10)

    each.run(HOSTS, "deploy", work, shown())
    assert boards == ["deploy\n" + "\n".join(f"  {h}: Wait until the engine on {h} reports healthy" for h in HOSTS)]


def test_an_interrupt_sent_to_station_alone_stops_every_hosts_playbook_and_frees_each_host(tmp_path) -> None:
    """As `kill -INT` does: only station's main thread gets the KeyboardInterrupt, and no playbook the SIGINT a
    terminal's Ctrl-C would send them all. Each host's process here sleeps, run as a playbook is. Both take SIGINT's
    default, whatever this suite inherited: a background job (nohup ... &, as CI may run) ignores it."""
    started: list[subprocess.Popen] = []
    sleeper = [
        sys.executable,
        "-c",
        "import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); time.sleep(120)",
    ]

    def work(host: str, out: Console) -> None:
        playbook._stream(sleeper, tmp_path / f"{host}.log", out)

    def interrupt_once_all_run() -> None:
        deadline = time.monotonic() + 30
        while len(playbook._running) < len(HOSTS) and time.monotonic() < deadline:
            time.sleep(0.05)
        started.extend(playbook._running)
        _thread.interrupt_main()

    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt_once_all_run, daemon=True).start()
    began = time.monotonic()
    console = shown()
    try:
        with pytest.raises(KeyboardInterrupt):
            each.run(HOSTS, "deploy", work, console)
    finally:
        signal.signal(signal.SIGINT, inherited)
    print(f"every host stopped {time.monotonic() - began:.1f} s after the fleet command began")
    assert len(started) == len(HOSTS) and all(proc.returncode == -signal.SIGINT for proc in started)
    assert not playbook._running
    for host in HOSTS:
        assert lock.held(host) is None
        assert "ansible-playbook exited with" in host_section(console.file.getvalue(), "deploy", host)
