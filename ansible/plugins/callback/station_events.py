"""Ansible stdout callback: one JSON object per line, rendered by station's console."""

from __future__ import annotations

import json
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: station_events
type: stdout
short_description: JSON lines for station's console
description:
  - One JSON object per line for each play, task, result, retry and the final stats.
  - station (station/deploy/playbook.py) renders them; results of no_log tasks arrive censored by Ansible.
"""

# Result fields worth showing when a task fails or reports.
SHOWN_FIELDS = ("msg", "rc", "stdout", "stderr", "skip_reason", "busy")


def failed_items(result: dict) -> str:
    """What a looped task's failed items said: its own message says only that one or more failed."""
    said = [str(item.get("msg", "")).strip() for item in result.get("results", []) if item.get("failed")]
    return "\n".join(message for message in said if message)


def _is_note(result) -> bool:
    return result._task.action in ("debug", "ansible.builtin.debug")


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "station_events"

    def __init__(self) -> None:
        super().__init__()
        self._started = time.monotonic()

    def _emit(self, event: str, **data) -> None:
        # `s`: seconds since the playbook started, so a log shows where a run's time went.
        at = round(time.monotonic() - self._started, 2)
        self._display.display(json.dumps({"event": event, "s": at, **data}, default=str))

    def _result(self, event: str, result, **extra) -> None:
        fields = {k: result._result[k] for k in SHOWN_FIELDS if result._result.get(k) not in (None, "")}
        self._emit(event, host=result._host.get_name(), task=result._task.get_name(), **(fields | extra))

    def v2_playbook_on_play_start(self, play) -> None:
        self._emit("play", name=play.get_name())

    def v2_playbook_on_task_start(self, task, is_conditional) -> None:
        self._emit("task", name=task.get_name())

    def v2_playbook_on_handler_task_start(self, task) -> None:
        self._emit("task", name=task.get_name())

    def v2_runner_on_ok(self, result) -> None:
        if not _is_note(result):
            self._result("ok", result, changed=bool(result._result.get("changed")))
        elif "results" not in result._result:  # a looped note said each item already
            self._result("note", result)

    def v2_runner_item_on_ok(self, result) -> None:
        if _is_note(result):
            self._result("note", result)

    def v2_runner_on_failed(self, result, ignore_errors=False) -> None:
        items = failed_items(result._result)
        self._result("ok" if ignore_errors else "failed", result, changed=False, **({"msg": items} if items else {}))

    def v2_runner_on_skipped(self, result) -> None:
        self._result("skipped", result)

    def v2_runner_on_unreachable(self, result) -> None:
        self._result("unreachable", result)

    def v2_runner_retry(self, result) -> None:
        self._emit(
            "retry",
            host=result._host.get_name(),
            task=result._task.get_name(),
            attempt=result._result.get("attempts"),
            retries=result._result.get("retries"),
        )

    def v2_playbook_on_stats(self, stats) -> None:
        hosts = {host: stats.summarize(host) for host in sorted(stats.processed)}
        self._emit("stats", hosts=hosts, custom=stats.custom)  # what set_stats handed station
