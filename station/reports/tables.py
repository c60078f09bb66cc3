"""Console views of deployments, benchmark runs and host status (rich)."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from station.bench import agentic as agentic_client
from station.bench.accuracy import AccuracyRun
from station.bench.cost import Cost, Scenario
from station.bench.measure import AgenticRun, BenchRun
from station.bench.records import FleetFigures
from station.bench.telemetry import TelemetrySummary
from station.bench.traffic import Drift, TrafficProfile
from station.deploy.actions import Deployment, Provisioning
from station.deploy.agent_check import Check
from station.deploy.host_status import HostStatus
from station.recipes.fit import GIB, Fit


def deployment(done: Deployment) -> Table:
    table = Table(title=f"Deployed {done.recipe.name} on {done.host}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Endpoint", f"{done.endpoint}  (OpenAI API; on {done.host}'s loopback)")
    table.add_row("Model", done.recipe.model.served_name)
    table.add_row("API key", f"{done.api_key_file}  (send as: Authorization: Bearer <key>)")
    table.add_row("Prometheus", f"{done.prometheus_url}  (alerts: {done.prometheus_url}/alerts)")
    if done.grafana_url:
        table.add_row("Grafana", f"{done.grafana_url}  (user admin, password in {done.grafana_password_file})")
    else:
        table.add_row("Grafana", "skipped: no Grafana image for this host (see the note above)")
    _changes(table, done.changed_tasks)
    if done.took_over:
        table.add_row("Switch", "the new configuration proved itself beside the live engine: no request failed")
    if done.in_place_window_s is not None:
        table.add_row(
            "Switch",
            f"replaced in place (drain and swap): the router held new requests for up to "
            f"{done.in_place_window_s:.0f} s while the engine finished its own and the new one started "
            f"(it holds each at most {done.hold_s} s, vllm_router_hold_s)",
        )
    table.add_row("Took", f"{done.seconds:.0f} s")
    return table


OUTCOME_STYLE = {"pass": "[green]pass[/]", "fail": "[red]FAIL[/]", "skip": "[yellow]skip[/]"}


def agent_checks(host: str, checks: list[Check]) -> Table:
    table = Table(title=f"What coding agents send, against {host}", title_justify="left")
    table.add_column("Capability")
    table.add_column("Result")
    table.add_column("Detail", overflow="fold")
    for check in checks:
        table.add_row(check.capability, OUTCOME_STYLE[check.outcome], check.detail)
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
    table.add_row("GPU telemetry", gpu_telemetry(run.telemetry), "")
    return table


def fleet(figures: FleetFigures) -> Table:
    """Each host's share of a run through its fleet's router, from the host's own engine counters."""
    routing = " ".join(figures.routing) or figures.policy
    title = f"Each host's share, through {figures.router}'s router ({routing})"
    caption = f"Counted by each host's engine; router retries: {figures.retries:,.0f}"
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    for column in ("Host", "Requests", "Output tokens", "Share", "Prefix-cache hit rate"):
        table.add_column(column, justify="left" if column == "Host" else "right")
    for share in figures.shares:
        table.add_row(
            share.host,
            f"{share.requests:,.0f}",
            f"{share.output_tokens:,.0f}",
            f"{share.share:.1%}",
            _rate(share.prefix_cache_hit_rate),
        )
    requests, tokens = (sum(getattr(share, key) for share in figures.shares) for key in ("requests", "output_tokens"))
    table.add_section()
    table.add_row("Fleet", f"{requests:,.0f}", f"{tokens:,.0f}", "", _rate(figures.prefix_cache_hit_rate))
    return table


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.1%}"


def agentic(run: AgenticRun) -> Table:
    profile, metrics = run.profile, run.metrics
    title = (
        f"{run.recipe.name}, profile {profile.name}: {profile.sessions} sessions x {profile.turns} turns, "
        f"{profile.shared_prefix_tokens} shared + {profile.turn_input_tokens} per turn in, {profile.output_tokens} out"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("Metric")
    table.add_column("Measured", justify="right")
    table.add_column("Reference", justify="right")
    target = f">= {profile.per_user_target_tok_s:,.0f} per user" if profile.per_user_target_tok_s else "-"
    table.add_row("Output tok/s, all sessions", f"{metrics.output_throughput:,.0f}", "")
    table.add_row(
        "Per-session output tok/s p10 / p50",
        f"{metrics.per_session_tok_s_p10:,.1f} / {metrics.per_session_tok_s_p50:,.1f}",
        target,
    )
    latency = f"{metrics.turn_latency_p50_ms:,.0f} / {metrics.turn_latency_p99_ms:,.0f}"
    table.add_row("Turn latency p50 / p99 (ms)", latency, "")
    by_turn = ", ".join(f"{ttft:,.0f}" for ttft in metrics.ttft_p99_by_turn_ms)
    table.add_row("TTFT p99 (ms), all / by turn", f"{metrics.p99_ttft_ms:,.0f} / {by_turn}", "")
    hit_rate = f"{metrics.prefix_cache_hit_rate:.1%}" if metrics.prefix_cache_hit_rate is not None else "no queries"
    table.add_row("Prefix-cache hit rate (engine)", hit_rate, "")
    table.add_row("Sessions completed / failed", f"{metrics.sessions_completed} / {metrics.sessions_failed}", "")
    table.add_row("Requests / failed", f"{metrics.requests} / {metrics.failed}", "")
    bound = "  [red]client-bound: the client, not the engine, limited this run[/]" if metrics.client_bound else ""
    concurrency = f"{metrics.achieved_concurrency:.1f} (sessions keep {metrics.expected_concurrency:.1f} busy){bound}"
    table.add_row("Achieved concurrency", concurrency, "")
    table.add_row("Duration (s)", f"{metrics.duration_s:.1f}", "")
    table.add_row("Client", f"AIPerf {agentic_client.AIPERF_VERSION} on this machine (shares its CPU)", "")
    return table


def gpu_telemetry(summary: TelemetrySummary) -> str:
    if not summary.present:
        return f"none: {summary.reason}"
    if summary.avg_power_w is None:
        return f"{summary.source}: {summary.reason}"
    per_joule = f", {summary.output_tokens_per_joule:.2f} output tok/J" if summary.output_tokens_per_joule else ""
    return (
        f"{summary.gpus} GPU(s), {summary.avg_power_w:,.0f} W avg / {summary.peak_power_w:,.0f} W peak, "
        f"{summary.energy_j / 1000:,.1f} kJ{per_joule}, throttled {summary.throttled_s:.0f} s"
    )


def status(report: HostStatus) -> Table:
    table = Table(title=f"station on {report.host}", title_justify="left")
    for column in ("Container", "Status", "Health", "Recipe", "Dtype", "Image", "Published"):
        table.add_column(column)
    for row in report.containers:
        table.add_row(row.name, row.status, row.health, row.recipe, row.dtype, row.image, ", ".join(row.ports))
    for target in report.targets:
        error = f" ({target.last_error})" if target.last_error else ""
        table.add_row(f"scrape: {target.job}", f"{target.health}{error}", "", "", "", target.instance, "")
    return table


def cost(scenario: Scenario, result: Cost) -> Table:
    table = Table(title="Cost per million output tokens", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row(
        "Output throughput", f"{scenario.output_tokens_per_s:,.0f} tok/s at {scenario.utilisation:.0%} utilisation"
    )
    table.add_row("Host cost", f"USD {result.hourly:,.2f} per hour")
    table.add_row("Self-hosted", f"USD {result.self_hosted_per_mtok:,.4f} per M output tokens")
    table.add_row("API", f"USD {result.api_per_mtok:,.4f} per M output tokens")
    verdict = "cheaper" if result.savings >= 0 else "dearer"
    table.add_row("Self-hosting is", f"{abs(result.savings):.1%} {verdict} than the API")
    even = result.break_even_utilisation
    table.add_row("Break-even utilisation", f"{even:.1%}" if even <= 1 else f"never (would need {even:.0%})")
    return table


def drift(done: AccuracyRun) -> Table:
    a, b = done.steps
    table = Table(title=f"Accuracy drift, step {a} against step {b}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    result = done.drift
    table.add_row("Prompts (greedy, temperature 0)", str(result.prompts))
    table.add_row("Exact-match rate", f"{result.exact_match_rate:.2f}")
    first = f"{result.mean_first_divergence:.1f}" if result.mean_first_divergence is not None else "-"
    table.add_row("Diverged / mean first divergence (token)", f"{result.diverged} / {first}")
    table.add_row(
        "Mean |Δ top-k log-prob|", f"{result.mean_abs_logprob_diff:.3g} over {result.compared_positions} positions"
    )
    table.add_row("Verdict", "; ".join(done.problems) or "[green]within thresholds[/]")
    table.add_row("Details", str(done.folder))
    return table


def traffic_profile(profile: TrafficProfile, path: Path) -> Table:
    source = profile.provenance
    table = Table(title=f"Traffic on {source.host}, last {source.window} ({path})", show_header=False)
    table.add_row("Engine", f"{source.recipe} (config {source.config_hash}, vLLM {source.vllm_version})")
    busy = "" if profile.in_flight_p90 is None else f"; p90 {profile.in_flight_p90:.0f} in flight while busy"
    table.add_row(
        "Requests",
        f"{profile.requests:,} ({profile.requests_per_s:.2f}/s, {profile.concurrency_mean:.1f} running{busy})",
    )
    for label, lengths in (("Prompt tokens", profile.prompt_tokens), ("Generated tokens", profile.generation_tokens)):
        table.add_row(
            label, f"mean {lengths.mean:,.0f}, p50 {lengths.p50:,.0f}, p90 {lengths.p90:,.0f}, p99 {lengths.p99:,.0f}"
        )
    table.add_row("Prefix-cache hit rate", _share(profile.prefix_cache_hit_rate))
    table.add_row("Chat share", _share(profile.chat_share))
    return table


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def traffic_drift(reference: Path, drifts: list[Drift], threshold: float) -> Table:
    table = Table(title=f"Live traffic against {reference} (drift beyond {threshold}x either way)")
    for column in ("Quantity", "Reference", "Live", "Live/ref", ""):
        table.add_column(column, justify="left" if column == "Quantity" else "right")
    for row in drifts:
        flag = "[red]drift[/]" if row.beyond(threshold) else "ok"
        table.add_row(row.quantity, f"{row.reference:,.0f}", f"{row.live:,.0f}", f"{row.ratio:.2f}x", flag)
    return table


def fits(labelled: list[tuple[str, Fit]]) -> Table:
    """Each recipe (or ladder step) on its GPU: where the memory goes, and what the KV cache holds."""
    first = labelled[0][1]
    per_gpu = f", per GPU of tensor parallel {first.tensor_parallel}" if first.tensor_parallel > 1 else ""
    table = Table(
        title=f"{first.model} on a {first.gpu_bytes / GIB:.0f} GiB GPU, {first.utilization:.2f} for vLLM{per_gpu}",
        caption=f"GiB. Needs: the smallest GPU it fits. Sequences: of the benchmark's {first.sequence_tokens:,} "
        f"tokens the KV cache holds at once (max-num-seqs {first.max_num_seqs})"
        + (". Estimated: the model's card gives its size from related checkpoints" if first.estimated else ""),
        title_justify="left",
        caption_justify="left",
    )
    table.add_column("Recipe", no_wrap=True)
    for column in ("Weights", "Mamba", "Overhead", "KV cache", "KV tokens", "Sequences", "Needs", "Fits"):
        table.add_column(column, justify="right")
    for label, fit in labelled:
        table.add_row(
            label.split(" (")[0],  # a ladder's step: "step 3 (what it changes)"
            *(f"{part / GIB:.1f}" for part in (fit.weights, fit.mamba_state, fit.overhead, fit.kv_cache)),
            f"{fit.kv_tokens / 1e6:.2f}M",
            f"{fit.sequences:,}",
            f"{fit.needed_bytes / GIB:.0f}",
            "[green]yes[/]" if fit.fits else "[red]NO[/]",
        )
    return table
