"""A finished ladder, side by side: a console table, a markdown report and a PNG chart."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from station.bench import runs
from station.bench.ladder import LadderRun, StepRow
from station.recipes.recipe import Ladder
from station.reports import charts, templates

COLUMNS = ("Step", "Change", "Output tok/s", "Ratio", "Published", "TTFT p99 ms", "TPOT p99 ms", "MTP acceptance")


def cells(state: LadderRun, row: StepRow) -> list[str]:
    ratio = state.ratio(row)
    return [
        str(row.step),
        row.change,
        f"{row.output_throughput:,.0f}",
        f"{ratio:.2f}x" if ratio is not None else "-",
        f"{row.published:,.0f}" if row.published else "-",
        f"{row.p99_ttft_ms:,.0f}",
        f"{row.p99_tpot_ms:,.1f}",
        f"{row.acceptance_rate:.1f} %" if row.acceptance_rate is not None else "-",
    ]


def ratio_note(state: LadderRun) -> str:
    baseline = state.baseline
    return f"ratios are to step {baseline.step}, measured in the same run" if baseline else "no step measured"


def table(state: LadderRun) -> Table:
    view = Table(title=f"Ladder {state.ladder} on {state.host} ({ratio_note(state)})", title_justify="left")
    for column in COLUMNS:
        view.add_column(column, justify="left" if column == "Change" else "right")
    for row in state.rows:
        view.add_row(*cells(state, row))
    return view


def markdown(state: LadderRun, ladder: Ladder, chart: Path) -> str:
    first_recipe = ladder.recipe(state.steps[0])
    return templates.render(
        "ladder.md.j2",
        state=state,
        ladder=ladder,
        profile=first_recipe.bench,
        engine=first_recipe.engine,
        gpu=runs.read(state.rows[0].run_id).provenance.gpu if state.rows else None,
        note=ratio_note(state),
        minutes=sum(row.seconds for row in state.rows) / 60,
        columns=COLUMNS,
        rows=[cells(state, row) for row in state.rows],
        chart=chart,
    )


def chart(state: LadderRun, path: Path) -> Path:
    steps = [f"{row.step}" for row in state.rows]
    measured = [row.output_throughput for row in state.rows]
    figure, axes = charts.new(max(6, 1.3 * len(steps)))
    bars = axes.bar(steps, measured, color="#4477aa", label="measured")
    for bar, row in zip(bars, state.rows, strict=True):
        ratio = state.ratio(row)
        axes.annotate(
            f"{ratio:.2f}x" if ratio else "",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=9,
        )
    published = [(f"{row.step}", row.published) for row in state.rows if row.published]
    if published:
        axes.plot(*zip(*published, strict=True), "o", color="#cc6677", label="published")
    axes.set_xlabel("step")
    axes.set_ylabel("output tokens/s")
    axes.set_title(f"{state.ladder} on {state.host}")
    axes.legend(loc="upper left")
    return charts.save(figure, path)


def write(state: LadderRun, ladder: Ladder) -> tuple[Path, Path]:
    """report.md and chart.png in the ladder run's folder."""
    state.folder.mkdir(parents=True, exist_ok=True)
    png = chart(state, state.folder / "chart.png")
    report = state.folder / "report.md"
    report.write_text(markdown(state, ladder, png))
    return report, png
