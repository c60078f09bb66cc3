"""Reports over stored runs: markdown and PNG charts (`invoke report`), two runs side by side (`invoke compare`)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from rich.table import Table

from station import paths
from station.bench import runs
from station.bench.bench_result import BenchResult
from station.bench.records import IndexEntry, RunRecord
from station.bench.telemetry import TelemetrySummary
from station.errors import StationError
from station.reports import charts, templates

REPORTS = paths.RESULTS / "reports"

# (label, field of the run's metrics, format, higher is better); agentic runs lack some (shown as -)
COMPARED = [
    ("Output tok/s", "output_throughput", "{:,.0f}", True),
    ("Total tok/s", "total_token_throughput", "{:,.0f}", True),
    ("Requests/s", "request_throughput", "{:.2f}", True),
    ("TTFT p50 ms", "p50_ttft_ms", "{:,.0f}", False),
    ("TTFT p99 ms", "p99_ttft_ms", "{:,.0f}", False),
    ("TPOT p50 ms", "p50_tpot_ms", "{:,.1f}", False),
    ("TPOT p99 ms", "p99_tpot_ms", "{:,.1f}", False),
    ("ITL p99 ms", "p99_itl_ms", "{:,.1f}", False),
    ("Failed", "failed", "{:d}", False),
    ("Prefix-cache hit rate", "prefix_cache_hit_rate", "{:.1%}", True),  # agentic runs: the engines' own counters
]


def _power(entry: IndexEntry) -> str:
    if entry.avg_power_w is None:
        return "no GPU telemetry" if entry.gpu == "none" else "-"
    per_joule = entry.output_tokens_per_joule
    return f"{entry.avg_power_w:,.0f} W, {per_joule:.2f} tok/J" if per_joule else f"{entry.avg_power_w:,.0f} W"


def runs_markdown(entries: list[IndexEntry], charts: list[Path]) -> str:
    now = f"{datetime.now(UTC):%Y-%m-%d %H:%M}"
    return templates.render("runs.md.j2", now=now, entries=entries, charts=charts, power=_power)


def _labels(entries: list[IndexEntry]) -> list[str]:
    return [f"{e.recipe}\n{e.run_id[:16]}" for e in entries]


def chart_throughput(entries: list[IndexEntry], path: Path) -> Path:
    figure, axes = charts.new(max(6, 1.4 * len(entries)))
    axes.bar(_labels(entries), [e.output_throughput for e in entries], color="#4477aa")
    axes.set_ylabel("output tokens/s")
    axes.set_title("Output throughput by run")
    axes.tick_params(axis="x", labelsize=7)
    return charts.save(figure, path)


def chart_latency(records: list[RunRecord], path: Path) -> Path | None:
    measured = [r for r in records if isinstance(r.metrics, BenchResult)]  # agentic runs report turns, not TPOT
    if not measured:
        return None
    figure, axes = charts.new(max(8, 1.6 * len(measured)), columns=2)
    labels = [f"{r.provenance.recipe_name}\n{r.run_id[:16]}" for r in measured]
    for ax, metric in zip(axes, ("ttft", "tpot"), strict=True):
        for percentile, colour in (("p50", "#88ccee"), ("p99", "#cc6677")):
            values = [getattr(r.metrics, f"{percentile}_{metric}_ms") for r in measured]
            ax.plot(labels, values, "o-", color=colour, label=percentile)
        ax.set_title(f"{metric.upper()} (ms)")
        ax.legend()
        ax.tick_params(axis="x", labelsize=7)
    return charts.save(figure, path)


def chart_power(entries: list[IndexEntry], path: Path) -> Path | None:
    measured = [e for e in entries if e.avg_power_w]
    if not measured:
        return None  # no GPU telemetry in these runs: the report says so per run
    figure, axes = charts.new(6)
    axes.scatter([e.avg_power_w for e in measured], [e.output_throughput for e in measured], color="#117733")
    for e in measured:
        axes.annotate(e.recipe, (e.avg_power_w, e.output_throughput), fontsize=7)
    axes.set_xlabel("average GPU power (W)")
    axes.set_ylabel("output tokens/s")
    axes.set_title("Power against throughput")
    return charts.save(figure, path)


def write_report(entries: list[IndexEntry]) -> Path:
    """results/reports/<time>/report.md with its charts; returns the markdown path."""
    if not entries:
        raise StationError("no runs to report", "run `invoke smoke-bench` first, or check --run/--last")
    folder = REPORTS / f"{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}"
    folder.mkdir(parents=True)
    records = [runs.read(e.run_id) for e in entries]
    charts = [
        chart_throughput(entries, folder / "throughput.png"),
        chart_latency(records, folder / "latency.png"),
        chart_power(entries, folder / "power.png"),
    ]
    report = folder / "report.md"
    report.write_text(runs_markdown(entries, [c for c in charts if c]))
    return report


def machine(record: RunRecord) -> str:
    """What a run measured on: its GPUs, or for a CPU engine its CPU."""
    provenance = record.provenance
    if provenance.gpu_label != "none":
        return provenance.gpu_label
    return provenance.cpu_label or "a CPU it did not record"


def comparison(a: str, b: str) -> list[tuple[str, str, str, str]]:
    """(metric, A, B, B/A) rows of two runs, the machine each ran on first: a ratio across machines measures them."""
    records = [runs.read(a), runs.read(b)]
    machines = [machine(record) for record in records]
    same = machines[0] == machines[1]
    rows = [("Machine", *machines, "the same" if same else "not the same: the ratios measure the machines too")]
    for label, key, fmt, _ in COMPARED:
        first, second = (getattr(r.metrics, key, None) for r in records)
        ratio = f"{second / first:.2f}x" if first and second is not None else "-"
        rows.append((label, templates.number(first, fmt), templates.number(second, fmt), ratio))
    power = [r.telemetry or TelemetrySummary(present=False) for r in records]
    for label, key in (("Avg GPU power W", "avg_power_w"), ("Output tok/J", "output_tokens_per_joule")):
        first, second = (getattr(p, key) for p in power)
        ratio = f"{second / first:.2f}x" if first and second else "-"
        rows.append((label, templates.number(first, "{:,.2f}"), templates.number(second, "{:,.2f}"), ratio))
    if any(r.fleet for r in records):
        routing = [" ".join(r.fleet.routing) or r.fleet.policy if r.fleet else "-" for r in records]
        rows.append(("Fleet's routing", *routing, "-"))
    return rows


def comparison_table(a: str, b: str) -> Table:
    table = Table(title=f"A = {a}\nB = {b}", title_justify="left")
    for column in ("Metric", "A", "B", "B / A"):
        table.add_column(column, justify="left" if column == "Metric" else "right")
    for row in comparison(a, b):
        table.add_row(*row)
    return table


def write_comparison(a: str, b: str) -> Path:
    folder = REPORTS / f"{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}-compare"
    folder.mkdir(parents=True)
    path = folder / "compare.md"
    path.write_text(templates.render("compare.md.j2", a=a, b=b, rows=comparison(a, b)))
    return path
