"""`invoke ladder` end to end on the CPU engine of the simulated host, interrupted after one step and resumed (the
shipped ladders' flags are checked on the controller, in controller/test_check_recipe.py).

The ladder runs on `sim`, reached over SSH as a GPU host is, while the local
host's tests run beside it. It is the slowest test: an engine start and a
benchmark per step, so it measures two of cpu-ladder's five steps (the
defaults and the last, which has every switch) to fit the CI budget. Its
figures are printed, not asserted: they are numbers to report, not targets.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading

import pytest

from station import paths
from station.bench import ladder
from tests.integration.conftest import CLI_ENV, Invocation, cli, invoke, succeeded, wait_for

HOST = "sim"
FIRST, SECOND = 0, 4
STEPS = f"{FIRST},{SECOND}"


def _newest_state(started_after: set) -> ladder.LadderRun | None:
    fresh = set(ladder.LADDERS.glob(f"*-{HOST}-cpu-ladder/state.json")) - started_after
    if not fresh:
        return None
    return ladder.LadderRun.model_validate_json(max(fresh).read_text())


def _read_into(proc: subprocess.Popen, lines: list[str]) -> None:
    for line in proc.stdout:
        lines.append(line)


@pytest.fixture(scope="module")
def interrupted(provisioned) -> tuple[ladder.LadderRun, str]:
    """`invoke ladder` stopped with SIGINT (as Ctrl-C does) once its first step is measured, in its second's deploy."""
    before = set(ladder.LADDERS.glob("*/state.json"))
    proc = subprocess.Popen(
        cli("ladder", "--host", HOST, "--recipe", "cpu-ladder", "--steps", STEPS, "--fresh"),
        cwd=paths.ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=os.environ | CLI_ENV,
        # Ctrl-C's default, whatever this suite inherited: a shell's background job (nohup ... &) ignores SIGINT,
        # and so would the ladder, which then ran to its end uninterrupted
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines: list[str] = []
    reader = threading.Thread(target=_read_into, args=(proc, lines), daemon=True)
    reader.start()
    try:
        # the first step measured and saved, the second's deploy begun
        wait_for(lambda: any(f"Step {SECOND} (2 of 2)" in line for line in lines), 1200, "the ladder's second step")
        state = _newest_state(before)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=180)
        reader.join(timeout=30)
    finally:
        proc.kill()
    output = "".join(lines)
    assert proc.returncode == 130, output
    assert "run the same command again to resume" in output
    return state, output


@pytest.fixture(scope="module")
def resumed(interrupted) -> tuple[ladder.LadderRun, Invocation]:
    run = succeeded(invoke("ladder", "--host", HOST, "--recipe", "cpu-ladder", "--steps", STEPS, timeout=3600))
    state_file = ladder.LADDERS / interrupted[0].ladder_id / "state.json"
    return ladder.LadderRun.model_validate_json(state_file.read_text()), run


def test_an_interrupted_ladder_resumes_at_the_next_step(interrupted, resumed) -> None:
    before, _ = interrupted
    after, run = resumed
    assert [r.step for r in before.rows] == [0]
    assert f"Resuming ladder {before.ladder_id}: step(s) 0 measured, [4] to go" in run.output
    assert after.rows[0] == before.rows[0]  # step 0 was not measured again
    assert "Step 0 (" not in run.output
    assert "Step 4 (2 of 2)" in run.output
    # a ladder owns the engine: each step replaces it in place, and says for how long none served
    assert "replaced in place: the router held requests for" in run.output


def test_every_step_has_a_valid_row_with_ratios_from_the_same_run(resumed) -> None:
    state, run = resumed
    assert state.finished is not None
    assert [r.step for r in state.rows] == [0, 4]
    baseline = state.rows[0].output_throughput
    for row in state.rows:
        record = json.loads((paths.RESULTS / row.run_id / "result.json").read_text())
        assert record["metrics"]["failed"] == 0 and record["problems"] == []
        assert record["context"] == {"ladder_id": state.ladder_id, "step": row.step}
        assert record["provenance"]["engine"]["labels"]["io.station.recipe"] == f"cpu-ladder-step{row.step}"
        assert row.output_throughput == record["metrics"]["output_throughput"]
        assert f"{row.output_throughput / baseline:.2f}x" in run.output
    print("\n" + "\n".join(f"step {r.step}: {r.output_throughput:,.0f} tok/s ({r.seconds:.0f} s)" for r in state.rows))


def test_report_and_chart_are_written(resumed) -> None:
    state, run = resumed
    report, chart = state.folder / "report.md", state.folder / "chart.png"
    assert f"Report: {report}" in run.output
    text = report.read_text()
    assert text.count("\n| ") == 1 + len(state.rows)  # header and a row per step
    assert "ratios are to step 0, measured in the same run" in text.lower()
    assert chart.read_bytes()[:4] == b"\x89PNG"
