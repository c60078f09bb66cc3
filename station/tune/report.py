"""What a tune found: ranked trials (console and markdown), the Pareto chart, the A/B verdict."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import optuna
from optuna.trial import FrozenTrial, TrialState
from rich.table import Table

from station import paths
from station.reports import charts, templates
from station.tune.search import TuneRun, feasible, measurement, ranked
from station.tune.space import render_values


@dataclass(frozen=True)
class Row:
    rank: str
    trial: int
    values: str
    objective: str
    ttft_p99_ms: str
    tpot_p99_ms: str
    session_p10: str
    failed: str
    outcome: str

    def cells(self) -> tuple[str, ...]:
        """The row's cells, in the order of `headers`."""
        return (
            self.rank,
            str(self.trial),
            self.values,
            self.objective,
            self.ttft_p99_ms,
            self.tpot_p99_ms,
            self.session_p10,
            self.failed,
            self.outcome,
        )


def headers(objective: str) -> tuple[str, ...]:
    return ("Rank", "Trial", "Flags", objective, "TTFT p99 ms", "TPOT p99 ms", "Session p10 tok/s", "Failed", "Outcome")


def rows(run: TuneRun, found: optuna.Study) -> list[Row]:
    table = []
    for position, trial in enumerate(ranked(run, found), start=1):
        taken = measurement(trial)
        figures = taken.figures()

        def shown(name: str, pattern: str, figures: dict = figures) -> str:
            return format(figures[name], pattern) if figures.get(name) is not None else "-"

        table.append(
            Row(
                rank=str(position) if feasible(trial) else "-",
                trial=trial.number,
                values=render_values(taken.values),
                objective=shown(run.space.objective, ",.2f"),
                ttft_p99_ms=shown("p99_ttft_ms", ",.0f"),
                tpot_p99_ms=shown("p99_tpot_ms", ",.1f"),
                session_p10=shown("per_session_tok_s_p10", ",.2f"),
                failed=shown("failed", "d"),
                outcome=outcome(trial),
            )
        )
    return table


def outcome(trial: FrozenTrial) -> str:
    taken = measurement(trial)
    if taken.error:
        return f"did not serve: {taken.error}"
    if trial.state != TrialState.COMPLETE:
        return f"not a valid measurement: {'; '.join(taken.problems)}"
    outside = [metric for metric, excess in trial.constraints.items() if excess > 0]
    return f"outside {', '.join(outside)}" if outside else "within the constraints"


def console_table(run: TuneRun, found: optuna.Study) -> Table:
    table = Table(title=f"Tune {run.tune_id}: trials ranked by {run.space.objective}", title_justify="left")
    for header in headers(run.space.objective):
        wide = header in ("Flags", "Outcome")
        table.add_column(header, justify="left" if wide else "right", overflow="fold" if wide else "ellipsis")
    for row in rows(run, found):
        table.add_row(*row.cells())
    return table


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points no other point beats on both axes (lower TTFT p99, higher throughput), by TTFT."""
    front = []
    for ttft, throughput in sorted(points, key=lambda p: (p[0], -p[1])):
        if not front or throughput > front[-1][1]:
            front.append((ttft, throughput))
    return front


def chart(run: TuneRun, found: optuna.Study, path: Path) -> Path:
    """Output throughput against TTFT p99 for every measured trial; the front, and the A/B rounds."""
    figure, axes = charts.new(7.5, 5)
    measured = [t for t in ranked(run, found) if measurement(t).valid]
    for group, style in ((True, {"color": "tab:blue", "marker": "o"}), (False, {"color": "grey", "marker": "x"})):
        chosen = [measurement(t).figures() for t in measured if feasible(t) == group]
        label = "trial within the constraints" if group else "trial outside them"
        axes.scatter([f["p99_ttft_ms"] for f in chosen], [f["output_throughput"] for f in chosen], label=label, **style)
    front = pareto_front([(f["p99_ttft_ms"], f["output_throughput"]) for f in map(_figures, measured)])
    axes.plot([p[0] for p in front], [p[1] for p in front], color="tab:blue", alpha=0.4, label="Pareto front")
    for trial in measured:
        figures = _figures(trial)
        axes.annotate(str(trial.number), (figures["p99_ttft_ms"], figures["output_throughput"]), fontsize=8)
    if run.verdict:
        for side, index, color in (("A (running)", 0, "tab:orange"), ("B (best trial)", 1, "tab:green")):
            taken = [pair[index].figures() for pair in run.verdict.rounds if pair[index].valid]
            axes.scatter(
                [f["p99_ttft_ms"] for f in taken],
                [f["output_throughput"] for f in taken],
                color=color,
                marker="D",
                label=f"{side}, measured again",
            )
    axes.set_xlabel("TTFT p99 (ms)")
    axes.set_ylabel("Output tok/s")
    axes.set_title(f"{run.base_name} on {run.host}, profile {run.profile.name}")
    axes.legend(fontsize=8)
    return charts.save(figure, path)


def _figures(trial: FrozenTrial) -> dict:
    return measurement(trial).figures()


def write(run: TuneRun, found: optuna.Study) -> Path:
    """report.md and pareto.png in the tune's folder; returns the markdown path."""
    chart(run, found, run.folder / "pareto.png")
    winner = paths.RESULTS / run.winner if run.winner else None
    text = templates.render("report.md.j2", Path(__file__).parent, run=run, rows=rows(run, found), winner=winner)
    path = run.folder / "report.md"
    path.write_text(text)
    return path
