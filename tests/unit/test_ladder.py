"""Ladder runs: steps chosen, ratios against the same run's step 0, resume state, report and chart files."""

from __future__ import annotations

from pathlib import Path

import pytest

from station import paths
from station.bench import ladder
from station.errors import StationError
from station.recipes import recipe
from station.reports import ladder as ladder_report
from tests.conftest import stored_run


@pytest.fixture
def cpu_ladder() -> recipe.Ladder:
    return recipe.load_ladder("cpu-ladder")


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    monkeypatch.setattr(ladder, "LADDERS", tmp_path / "ladders")
    return tmp_path


def row(step: int, throughput: float, published: float | None = None) -> ladder.StepRow:
    return ladder.StepRow(
        step=step,
        change=f"change {step}",
        run_id=f"run-{step}",
        output_throughput=throughput,
        p99_ttft_ms=1000.0 + step,
        p99_tpot_ms=50.0,
        acceptance_rate=None,
        published=published,
        seconds=60.0,
    )


def test_steps_are_selected_and_checked(cpu_ladder) -> None:
    assert ladder.select_steps(cpu_ladder, "") == [0, 1, 2, 3, 4]
    assert ladder.select_steps(cpu_ladder, "3,0,3") == [0, 3]
    with pytest.raises(StationError, match="has no step '7'") as error:
        ladder.select_steps(cpu_ladder, "0,7")
    assert "steps are 0 to 4" in error.value.hint


def test_ratios_are_to_step_zero_of_the_same_run(cpu_ladder, results) -> None:
    run = ladder.start(cpu_ladder, "local", [0, 2, 4])
    run.rows = [row(0, 1000), row(2, 1500), row(4, 2500)]
    assert [run.ratio(r) for r in run.rows] == [1.0, 1.5, 2.5]
    assert run.pending == []


def test_without_step_zero_ratios_are_to_the_first_step_run(cpu_ladder, results) -> None:
    run = ladder.start(cpu_ladder, "local", [2, 4])
    run.rows = [row(2, 2000), row(4, 3000)]
    assert run.baseline.step == 2
    assert run.ratio(run.rows[1]) == 1.5
    assert "ratios are to step 2" in ladder_report.ratio_note(run)


def test_an_unfinished_run_is_found_again_only_for_the_same_ladder_host_and_steps(cpu_ladder, results) -> None:
    run = ladder.start(cpu_ladder, "local", [0, 1, 2, 3, 4])
    run.rows = [row(0, 1000)]
    run.save()
    found = ladder.unfinished(cpu_ladder, "local", [0, 1, 2, 3, 4])
    assert found is not None and found.ladder_id == run.ladder_id
    assert found.pending == [1, 2, 3, 4]
    assert ladder.unfinished(cpu_ladder, "sim", [0, 1, 2, 3, 4]) is None
    assert ladder.unfinished(cpu_ladder, "local", [0, 4]) is None


def test_a_finished_or_changed_ladder_starts_over(cpu_ladder, results, tmp_path) -> None:
    run = ladder.start(cpu_ladder, "local", [0, 1])
    run.save()
    changed = cpu_ladder.model_copy(update={"description": "edited"})
    assert ladder.unfinished(changed, "local", [0, 1]) is None
    run.finished = "2026-11-29T00:00:00+00:00"
    run.save()
    assert ladder.unfinished(cpu_ladder, "local", [0, 1]) is None


def test_report_and_chart_are_written(cpu_ladder, results) -> None:
    run = ladder.start(cpu_ladder, "local", [0, 1])
    run.rows = [row(0, 700, published=6058), row(1, 1850, published=7000)]
    run.finished = "2026-11-29T12:00:00+00:00"
    for r in run.rows:
        stored_run(r.run_id, r.output_throughput)
    report, chart = ladder_report.write(run, cpu_ladder)
    text = report.read_text()
    assert "| 1 | change 1 | 1,850 | 2.64x | 7,000 | 1,001 | 50.0 | - |" in text
    assert "ratios are to step 0, measured in the same run" in text.lower()
    assert "](../../run-1/result.json)" in text
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert chart.stat().st_size > 5000


def test_console_table_has_a_row_per_step(cpu_ladder, results) -> None:
    run = ladder.start(cpu_ladder, "local", [0, 3])
    run.rows = [row(0, 100), row(3, 150)]
    view = ladder_report.table(run)
    assert view.row_count == 2
    assert [column.header for column in view.columns][3] == "Ratio"
