"""The suite's report of where its time went (tests/timings.py), from the logs a run leaves."""

from __future__ import annotations

from pathlib import Path

from tests import timings


def test_each_task_lasts_until_the_next_and_a_cut_short_log_is_read_to_its_last_whole_event(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "run-deploy-local.log"
    log.parent.mkdir()
    log.write_text(
        "a warning Ansible printed before its first event\n"
        '{"event": "task", "s": 0.5, "name": "Query the Docker engine"}\n'
        '{"event": "ok", "s": 1.0, "host": "local", "task": "Query the Docker engine"}\n'
        '{"event": "task", "s": 2.0, "name": "Wait until the engine reports healthy"}\n'
        '{"event": "stats", "s": 42.0}\n'
        '{"event": "task", "s": 43'  # the playbook was killed mid-line
    )
    assert timings._task_seconds(log) == [
        ("Query the Docker engine", 1.5),
        ("Wait until the engine reports healthy", 40.0),
    ]


def test_the_summary_puts_the_slowest_command_and_task_first(tmp_path: Path) -> None:
    for argv, seconds in ((["invoke", "status"], 3.0), (["invoke", "deploy", "--host", "local"], 90.0)):
        timings.record(tmp_path, argv, seconds, 0)
    lines = timings.summary(tmp_path, tmp_path / "no-logs")
    assert lines[0] == "station commands: 2, 93 s in all"
    assert "invoke deploy --host local" in lines[1] and "invoke status" in lines[2]
    assert lines[3] == "Ansible: 0 playbooks, 0 tasks, 0 s; the tasks that took longest:"
