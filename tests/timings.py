"""Where the suite's time went: every station command the tests ran, and every Ansible task those commands ran.

The integration tests record each CLI invocation here (one JSON line each, in the sandbox both workers share); the
playbooks' own logs (station_events, one event per line with its second) give each task's wall time. The process that
started the run reads both before the sandbox is cleared and prints the slowest of each, just before pytest's durations.
"""

from __future__ import annotations

import itertools
import json
import os
from collections import defaultdict
from pathlib import Path

LOG_NAME = "invocations.jsonl"
SHOWN = 15


def record(sandbox: Path, argv: list[str], seconds: float, returncode: int) -> None:
    """Append one CLI invocation (the test that ran it, its arguments after `invoke`, its wall time)."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    line = {"test": test, "command": " ".join(argv[1:]), "seconds": round(seconds, 1), "returncode": returncode}
    with (sandbox / LOG_NAME).open("a") as log:
        log.write(json.dumps(line) + "\n")


def _invocations(sandbox: Path) -> list[dict]:
    path = sandbox / LOG_NAME
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _task_seconds(log: Path) -> list[tuple[str, float]]:
    """Each task of one playbook log with the seconds from its start to the next task's (or the play's end)."""
    events = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:  # Ansible's own warnings, or the last line of a playbook cut short
            continue
        if isinstance(event, dict) and event.get("event") in ("task", "stats"):
            events.append(event)
    return [(this["name"], after["s"] - this["s"]) for this, after in itertools.pairwise(events)]


def summary(sandbox: Path, logs: Path) -> list[str]:
    """The slowest commands, the playbooks' total, and the tasks that took the most time summed over every run."""
    invocations = sorted(_invocations(sandbox), key=lambda line: -line["seconds"])
    lines = [f"station commands: {len(invocations)}, {sum(line['seconds'] for line in invocations):,.0f} s in all"]
    for line in invocations[:SHOWN]:
        lines.append(f"{line['seconds']:8.1f}s  invoke {line['command'][:100]}  ({line['test']})")
    per_task: dict[str, list[float]] = defaultdict(list)
    playbooks = list(logs.glob("*.log")) if logs.exists() else []
    for log in playbooks:
        for name, seconds in _task_seconds(log):
            per_task[name].append(seconds)
    total = sum(sum(times) for times in per_task.values())
    count = sum(len(times) for times in per_task.values())
    lines.append(f"Ansible: {len(playbooks)} playbooks, {count:,} tasks, {total:,.0f} s; the tasks that took longest:")
    slowest = sorted(per_task.items(), key=lambda item: -sum(item[1]))[:SHOWN]
    lines += [f"{sum(times):8.1f}s  {len(times):4d}x  {name[:110]}" for name, times in slowest]
    return lines
