"""Run Ansible playbooks and show their progress; every host interaction goes through here.

ansible-playbook runs with station's stdout callback (ansible/plugins/callback/
station_events.py), which writes one JSON event per line. This module turns
those events into a live status line, a line per change or failure, and a
PlaybookResult. The same events are kept in a log under .station/logs/.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.status import Status

from station import paths
from station.deploy import lock
from station.errors import StationError


@dataclass
class PlaybookResult:
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0
    changed_tasks: list[str] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    handed: dict[str, dict[str, Any]] = field(default_factory=dict)  # per host, what its set_stats tasks handed us
    log: Path | None = None

    def failures_on(self, host: str) -> list[dict[str, Any]]:
        return [failure for failure in self.failures if failure["host"] == host]

    def handed_by(self, host: str, key: str) -> Any:
        """What the host's set_stats tasks handed back under `key`, or None."""
        return self.handed.get(host, {}).get(key)


# STATION_ANSIBLE_STRATEGY=station_mitogen (ansible/plugins/strategy/) runs every task of a host in one Python
# interpreter Mitogen keeps there, where Ansible's own strategy (the default) starts a new one per task and sends the
# module again. On an idle controller a deploy that changes nothing on the local host took 42 s and 46 s of CPU with
# Ansible's, 17 s and 19 s with Mitogen's; on a loaded one Mitogen took minutes to start (docs/how-it-works.md).
STRATEGY_ENV = "STATION_ANSIBLE_STRATEGY"
DEFAULT_STRATEGY = "linear"


def _strategy_plugins() -> str:
    """Station's strategy plugins, and Mitogen's own beside them."""
    spec = importlib.util.find_spec("ansible_mitogen")
    assert spec is not None and spec.submodule_search_locations, "mitogen is one of station's dependencies"
    mitogen = Path(spec.submodule_search_locations[0]) / "plugins" / "strategy"
    return os.pathsep.join([str(paths.ANSIBLE / "plugins" / "strategy"), str(mitogen)])


def ansible_env() -> dict[str, str]:
    """Environment that points Ansible at the bundle's config, callback and strategy."""
    bin_dir = str(Path(sys.executable).parent)
    strategy = os.environ.get(STRATEGY_ENV, DEFAULT_STRATEGY)
    # Every run with Mitogen's would warn that strategies outside ansible.builtin are deprecated
    quiet = {"ANSIBLE_DEPRECATION_WARNINGS": "False"} if "mitogen" in strategy else {}
    # ansible-core's SSH agent support imports cryptography's DSA, which warns on every run; a message filter, so that
    # no process that inherits it (a module on the local host) imports cryptography to read it.
    warnings = ",".join(filter(None, [os.environ.get("PYTHONWARNINGS"), "ignore:DSA is deprecated"]))
    return (
        os.environ
        | quiet
        | {
            "ANSIBLE_CONFIG": str(paths.ANSIBLE / "ansible.cfg"),
            "ANSIBLE_STDOUT_CALLBACK": "station_events",
            "ANSIBLE_STRATEGY_PLUGINS": _strategy_plugins(),
            "ANSIBLE_STRATEGY": strategy,
            # ansible/plugins/callback/station_bytecode.py and station_payloads.py
            "STATION_BYTECODE_DIR": str(paths.CACHE / "ansible-bytecode"),
            "STATION_PAYLOAD_DIR": str(paths.CACHE / "ansible-payloads"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "PYTHONWARNINGS": warnings,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        }
    )


def run(playbook: str, host: str, extra_vars: dict[str, Any], console: Console, tags: str = "") -> PlaybookResult:
    """Run ansible/playbooks/<playbook>.yml against one host; raise StationError on failure."""
    return run_file(paths.ANSIBLE / "playbooks" / f"{playbook}.yml", host, extra_vars, console, tags)


def controller_vars() -> dict[str, Any]:
    """Vars every playbook gets: where the controller keeps its state (secrets in a 0700 folder)."""
    paths.private_dir(paths.SECRETS)
    return {"station_state_dir": str(paths.STATE)}


def run_file(path: Path, host: str, extra_vars: dict[str, Any], console: Console, tags: str = "") -> PlaybookResult:
    result = _run(path, host, extra_vars, console, tags)
    _raise_on_failure(result, host, path.stem)
    return result


def run_on_each(
    playbook: str, hosts: list[str], extra_vars: dict[str, Any], console: Console
) -> dict[str, StationError]:
    """Run ansible/playbooks/<playbook>.yml on every host at once (Ansible's forks); one host failing stops nothing on
    the others. What went wrong on each host that failed, by host."""
    result = _run(paths.ANSIBLE / "playbooks" / f"{playbook}.yml", ",".join(hosts), extra_vars, console)
    failed: dict[str, StationError] = {}
    for host in hosts:
        try:
            _raise_on_failure(dataclasses.replace(result, failures=result.failures_on(host)), host, playbook)
        except StationError as error:
            failed[host] = error
    return failed


def _run(path: Path, host: str, extra_vars: dict[str, Any], console: Console, tags: str = "") -> PlaybookResult:
    # Unique per run, even for two commands started in the same second.
    name = f"{datetime.now(UTC):%Y%m%dT%H%M%S.%fZ}-{os.getpid()}-{path.stem}-{host.replace(',', '+')}"
    paths.LOGS.mkdir(parents=True, exist_ok=True)
    log = paths.LOGS / f"{name}.log"
    vars_file = paths.STATE / "run" / f"{name}.json"
    vars_file.parent.mkdir(parents=True, exist_ok=True)
    holder = lock.held(host)
    claim = {"station_lock_holder": holder.claim()} if holder else {}
    vars_file.write_text(json.dumps(controller_vars() | claim | extra_vars, indent=2))
    cmd = ["ansible-playbook", str(path), "--limit", host, "--extra-vars", f"@{vars_file}"]
    if tags:
        cmd += ["--tags", tags]
    result = _stream(cmd, log, console)
    result.log = log
    if holder and result.handed_by(host, "station_lock_taken"):
        holder.taken_on_host = True
    return result


# The playbooks running now: one per host of a fleet command, each read by its host's thread
_running: set[subprocess.Popen[str]] = set()
_running_guard = threading.Lock()


def interrupt_all() -> None:
    """Ctrl-C for every playbook running now. Python hands a KeyboardInterrupt to the main thread only, so the
    threads of a fleet command's other hosts never see it: a signal sent to station alone must reach theirs too."""
    with _running_guard:
        running = list(_running)
    for proc in running:
        proc.send_signal(signal.SIGINT)


def _stream(cmd: list[str], log: Path, console: Console) -> PlaybookResult:
    result = PlaybookResult()
    with (
        log.open("w") as log_file,
        subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ansible_env(), cwd=paths.ANSIBLE
        ) as proc,
        console.status("Starting Ansible") as status,
    ):
        renderer = _Renderer(console, status, result)
        assert proc.stdout is not None
        with _running_guard:
            _running.add(proc)
        try:
            for line in proc.stdout:
                log_file.write(line)
                renderer.line(line.rstrip("\n"))
        except KeyboardInterrupt:
            # Ctrl-C in a terminal reaches Ansible too; a signal sent to station alone must as well.
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
            raise
        finally:
            with _running_guard:
                _running.discard(proc)
    if proc.returncode != 0 and not (result.failed or result.unreachable):
        raise StationError(f"ansible-playbook exited with {proc.returncode}", f"see {log}")
    return result


class _Renderer:
    """Turns callback events into console output."""

    def __init__(self, console: Console, status: Status, result: PlaybookResult) -> None:
        self.console, self.status, self.result = console, status, result
        self.task_started = time.monotonic()
        self.notes: set[str] = set()

    def line(self, text: str) -> None:
        try:
            event = json.loads(text)
        except json.JSONDecodeError:
            if text.strip():
                self.console.print(text, style="dim", markup=False, highlight=False)
            return
        event.pop("s", None)  # for the log only
        getattr(self, f"on_{event.pop('event')}", lambda **_: None)(**event)

    def on_task(self, name: str) -> None:
        self.task_started = time.monotonic()
        self.status.update(name)

    def on_retry(self, task: str, attempt: int, retries: int, **_: Any) -> None:
        elapsed = time.monotonic() - self.task_started
        self.status.update(f"{task} — {elapsed:.0f}s (check {attempt} of {retries})")

    def on_ok(self, task: str, changed: bool, host: str, **fields: Any) -> None:
        if changed:
            self.result.changed_tasks.append(task)
            self.console.print(f"  [yellow]changed[/] {task}", highlight=False)

    def on_note(self, task: str, msg: str = "", **_: Any) -> None:
        if msg not in self.notes:  # a role's own preflight may repeat a playbook's
            self.notes.add(msg)
            self.console.print(f"  [cyan]note[/] {msg}", highlight=False)

    def on_skipped(self, task: str, skip_reason: str = "", **_: Any) -> None:
        if skip_reason and skip_reason != "Conditional result was False":
            self.console.print(f"  [cyan]skipped[/] {task}: {skip_reason}", highlight=False)

    def on_failed(self, task: str, host: str, **fields: Any) -> None:
        self.result.failures.append({"task": task, "host": host, **fields})
        self.console.print(f"  [red]failed[/] {task}", highlight=False)

    def on_unreachable(self, task: str, host: str, **fields: Any) -> None:
        self.result.failures.append({"task": task, "host": host, "unreachable": True, **fields})

    def on_stats(self, hosts: dict[str, dict[str, int]], custom: dict[str, dict[str, Any]] | None = None) -> None:
        self.result.handed = custom or {}
        for counts in hosts.values():
            for key in ("ok", "changed", "failures", "unreachable", "skipped"):
                attr = "failed" if key == "failures" else key
                setattr(self.result, attr, getattr(self.result, attr) + counts.get(key, 0))


UNLOCK_HINT = "if that command's controller is gone, `invoke unlock --host {host}` frees the host"


def _raise_on_failure(result: PlaybookResult, host: str, playbook: str) -> None:
    if not result.failures:
        return
    # The last failure explains the run: a rescue's message comes after the task it rescued.
    failure = result.failures[-1]
    if failure.get("busy"):  # another controller's command holds the host's lock (ansible/playbooks/lock.yml)
        raise StationError(f"{host} is {failure['msg']}", f"{lock.BUSY_HINT}; {UNLOCK_HINT.format(host=host)}")
    if failure.get("unreachable"):
        raise StationError(
            f"{host} is unreachable: {str(failure.get('msg', '')).strip()}",
            f"check ansible_host and ansible_user for {host} in ansible/inventory/hosts.yml, and that ssh reaches it",
        )
    detail = "\n".join(str(failure[key]).strip() for key in ("msg", "stderr", "stdout") if failure.get(key))
    raise StationError(f"{playbook} failed on {host} at “{failure['task']}”:\n{detail}", f"full log: {result.log}")
