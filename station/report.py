"""Console views of deployments, benchmark runs and host status (rich)."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from station.actions import BenchRun, Deployment, Provisioning


def deployment(done: Deployment) -> Table:
    table = Table(title=f"Deployed {done.recipe.name} on {done.host}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Endpoint", f"{done.endpoint}  (OpenAI API; on {done.host}'s loopback)")
    table.add_row("Model", done.recipe.model.served_name)
    table.add_row("API key", f"{done.api_key_file}  (send as: Authorization: Bearer <key>)")
    table.add_row("Prometheus", done.prometheus_url)
    _changes(table, done.changed_tasks)
    table.add_row("Took", f"{done.seconds:.0f} s")
    return table


def provisioning(done: Provisioning) -> Table:
    table = Table(title=f"Provisioned {done.host}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    _changes(table, done.changed_tasks)
    table.add_row("Took", f"{done.seconds:.0f} s")
    return table


def _changes(table: Table, changed_tasks: list[str]) -> None:
    if changed_tasks:
        table.add_row("Changes", "\n".join(changed_tasks))
    else:
        table.add_row("Changes", "none: the host was already as described (Ansible changed=0)")


def bench(run: BenchRun) -> Table:
    result, profile, reference = run.result, run.recipe.bench, run.recipe.reference
    title = (
        f"{run.recipe.name}: {profile.input_len} in / {profile.output_len} out, "
        f"{profile.concurrency} concurrent, {profile.num_prompts} prompts"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("Metric")
    table.add_column("Measured", justify="right")
    table.add_column("Reference", justify="right")
    ref = f"{reference.output_throughput:,.0f}  ({reference.hardware})" if reference else "-"
    table.add_row("Output tok/s", f"{result.output_throughput:,.0f}", ref)
    table.add_row("Total tok/s", f"{result.total_token_throughput:,.0f}", "")
    table.add_row("Requests/s", f"{result.request_throughput:.2f}", "")
    for name, key in (("TTFT", "ttft"), ("TPOT", "tpot"), ("ITL", "itl")):
        p50, p99 = getattr(result, f"p50_{key}_ms"), getattr(result, f"p99_{key}_ms")
        table.add_row(f"{name} p50 / p99 (ms)", f"{p50:,.1f} / {p99:,.1f}", "")
    if result.spec_decode_acceptance_rate is not None:
        table.add_row("MTP acceptance rate", f"{result.spec_decode_acceptance_rate:.1f} %", "")
    table.add_row("Completed / failed", f"{result.completed} / {result.failed}", "")
    bound = "  [red]client-bound: the client, not the engine, limited this run[/]" if result.client_bound else ""
    table.add_row("Achieved concurrency", f"{result.achieved_concurrency:.1f} of {result.max_concurrency}{bound}", "")
    table.add_row("Duration (s)", f"{result.duration:.1f}", "")
    return table


def status(report: dict[str, Any]) -> Table:
    table = Table(title=f"station on {report['host']}", title_justify="left")
    for column in ("Container", "Status", "Health", "Recipe", "Image", "Published"):
        table.add_column(column)
    for row in report["containers"]:
        table.add_row(row["name"], row["status"], row["health"], row["recipe"], row["image"], ", ".join(row["ports"]))
    for target in report["targets"]:
        error = f" ({target['last_error']})" if target["last_error"] else ""
        table.add_row(f"scrape: {target['job']}", target["health"] + error, "", "", target["instance"], "")
    return table
