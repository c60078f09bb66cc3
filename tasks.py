"""station's command line: `invoke --list` shows the tasks, `invoke --help TASK` their options.

Thin by design: each task parses its arguments, calls station, prints.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shlex
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from invoke import Collection, Context, Exit, task
from rich.console import Console
from rich.markup import escape

from station import paths
from station.bench import accuracy, capture, cost, gate, ladder, measure, runs, traffic
from station.bench import fleet as fleet_bench
from station.deploy import actions, argcheck, delivery, inventory, lock, sim, tunnel
from station.deploy import agent_check as agents
from station.errors import StationError
from station.fleet import each, k8s, rotation
from station.recipes import fit as fitting
from station.recipes import profiles
from station.recipes import recipe as recipes
from station.reports import ladder as ladder_report
from station.reports import runs as run_report
from station.reports import tables as report
from station.tune import promote as promotion
from station.tune import run as tuning
from station.tune import space as spaces

console = Console()

HOST_HELP = "Inventory host (ansible/inventory/hosts.yml); default: local, this machine"
HOSTS_HELP = HOST_HELP + "; or an inventory group, or hosts and groups separated by commas (all at once)"
RECIPE_HELP = "Recipe name under recipes/ or a path to a recipe file; default: cpu-smoke"
TAGS_HELP = "Only these stages, comma-separated (preflight, nvidia_driver, docker_engine, ...)"


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn a StationError into the problem, what to do, and exit code 1 — no traceback."""
    try:
        yield
    except StationError as error:
        console.print(f"[red]error:[/] {escape(error.problem)}", highlight=False)
        raise Exit(f"  → {error.hint}" if error.hint else "", code=1) from error


@contextmanager
def on_host(host: str, command: str, *more: str) -> Iterator[None]:
    """As user_errors, holding the host's lock (and those of `more` hosts the command changes too): one command that
    changes or measures a host at a time, from this controller and any other (the host keeps the claim while the
    command runs, and it is freed when it ends)."""
    with user_errors(), ExitStack() as held:
        for name in (host, *more):
            held.enter_context(actions.holding(name, command, console))
        yield


def on_each_host(c: Context, host: str | None, command: str, work: each.Work, locked: bool = True) -> None:
    """`work` on the host, or on every host of a group or list at once, each under its lock where `locked`."""
    with user_errors():
        hosts = inventory.targets(host or c.config.station.host)
        if len(hosts) > 1:
            each.run(hosts, command, work, console, locked)
            return
    with on_host(hosts[0], command) if locked else user_errors():
        work(hosts[0], console)


def host_and_recipe(c: Context, host: str | None, recipe: str | None = None) -> tuple[str, str]:
    return host or c.config.station.host, recipe or c.config.station.recipe


@task(help={"host": HOSTS_HELP, "recipe": "Recipe whose GPU needs to check (optional)", "tags": TAGS_HELP})
def provision(c, host=None, recipe=None, tags=""):
    """Take a host to ready: checks, NVIDIA driver, container toolkit, Docker, tuning; a second run changes nothing."""
    with user_errors():
        chosen = recipes.load(recipe) if recipe else None

    def provision_on(host: str, out: Console) -> None:
        out.print(report.provisioning(actions.provision(host, chosen, tags, out)))

    on_each_host(c, host, "provision", provision_on)


@task(help={"host": HOST_HELP, "recipe": RECIPE_HELP})
def bundle(c, host=None, recipe=None):
    """Build the offline bundle (images and wheels) a host without registry access needs for a recipe."""
    host, recipe = host_and_recipe(c, host, recipe)
    with on_host(host, "bundle"):
        console.print(f"Offline bundle: {delivery.build_bundle(host, recipes.load(recipe), console)}")


def require_agent_capabilities(host: str, out: Console, checks: list[agents.Check]) -> None:
    out.print(report.agent_checks(host, checks))
    failed = ", ".join(check.capability for check in agents.failed(checks))
    if failed:
        raise StationError(
            f"coding agents cannot use the endpoint on {host}: {failed} failed",
            "fix the recipe as the table says and deploy again",
        )


@task(
    help={
        "host": HOSTS_HELP,
        "recipe": RECIPE_HELP,
        "agent_check": "Try what coding agents send after the health check (default on; --no-agent-check skips it)",
        "in_place": "Replace the engine in its own container, the router holding new requests meanwhile, rather than "
        "proving the new configuration beside it first (the default where two engines do not fit: GPU engines)",
    }
)
def deploy(c, host=None, recipe=None, agent_check=True, in_place=False):
    """Deploy the recipe's engine and monitoring on a host, then check agents can use it; a rerun changes nothing."""
    with user_errors():
        chosen = recipes.load(recipe or c.config.station.recipe)

    def deploy_on(host: str, out: Console) -> None:
        gate = functools.partial(require_agent_capabilities, host, out) if agent_check else None
        out.print(report.deployment(actions.deploy(host, chosen, out, agent_gate=gate, in_place=in_place)))

    on_each_host(c, host, "deploy", deploy_on)


@task(
    help={
        "host": HOST_HELP,
        "recipe": RECIPE_HELP + " (the new configuration)",
        "canary": "Agentic profile replayed against the candidate (a name under recipes/profiles/ or a path); "
        "default: the recipe's own, else agentic-cpu for engines without GPUs and agentic with them",
        "min_exact_match": "Accuracy gate: refuse below this share of answers identical to the live engine's "
        "(default 0.9)",
        "max_logprob_diff": "Accuracy gate: refuse above this mean top-k log-probability difference (default 0.05)",
        "accuracy_gate": "Compare the candidate's answers with the live engine's (default on; --no-accuracy-gate "
        "skips it, e.g. for another model)",
        "in_place": "Where two engines do not fit (one GPU the model fills): swap the new configuration in on trial, "
        "the router holding requests, run the gates there, and swap the last healthy one back if a gate refuses",
    }
)
def promote(
    c, host=None, recipe=None, canary="", min_exact_match=0.9, max_logprob_diff=0.05, accuracy_gate=True, in_place=False
):
    """Start a new configuration beside the live engine, put it through health, agent-check, a canary replay and
    the accuracy gate, then move the traffic to it with no failed request; any failed gate changes nothing."""
    host, recipe = host_and_recipe(c, host, recipe)
    with on_host(host, "promote"):
        chosen = recipes.load(recipe)
        thresholds = accuracy.Thresholds(float(min_exact_match), float(max_logprob_diff)) if accuracy_gate else None
        gate = functools.partial(require_agent_capabilities, host, console)
        done, evidence = promotion.run(
            host, chosen, profiles.load(canary or canary_for(chosen)), thresholds, gate, console, in_place
        )
        console.print(report.deployment(done))
        console.print(f"Promoted {chosen.name} on {host}; the gates' evidence: {evidence.folder}")


def canary_for(chosen: recipes.Recipe) -> str:
    if chosen.profile != profiles.RANDOM:
        return chosen.profile
    return "agentic" if chosen.engine.container.gpus else "agentic-cpu"


@task(name="agent-check", help={"host": HOSTS_HELP, "recipe": RECIPE_HELP + " (the one deployed there)"})
def check_agents(c, host=None, recipe=None):
    """Try what coding agents send (chat, streaming, tools, tool results, long prompts) against the endpoint."""
    with user_errors():
        chosen = recipes.load(recipe or c.config.station.recipe)

    def check_on(host: str, out: Console) -> None:
        require_agent_capabilities(host, out, actions.check_agents(host, chosen, out))

    on_each_host(c, host, "agent-check", check_on, locked=False)


@task(
    name="smoke-bench",
    help={
        "host": HOST_HELP + "; or a fleet (its group), measured through its router, the profile scaled to its size",
        "recipe": RECIPE_HELP,
        "profile": "Traffic profile: random (the recipe's bench, vLLM's benchmark on the host) or one under "
        "recipes/profiles/ (agentic ones replay conversations with AIPerf from this machine); default: the recipe's",
        "baseline": "A run id to gate against: exit non-zero when this run is worse beyond the margins",
        "max_throughput_drop": "Regression margin: output throughput may fall this many percent (default 5)",
        "max_ttft_rise": "Regression margin: TTFT p99 may rise this many percent (default 10)",
    },
)
def smoke_bench(c, host=None, recipe=None, profile="", baseline="", max_throughput_drop=None, max_ttft_rise=None):
    """Benchmark the deployed engine with a traffic profile: the recipe's own (from the host) or an agentic one."""
    host, name = host_and_recipe(c, host, recipe)
    with user_errors():
        recipe = recipes.load(name)
        fleet = fleet_bench.of(host)
    host = fleet.router if fleet else host
    profile = profile or recipe.profile
    if profile != profiles.RANDOM:
        with on_host(host, "smoke-bench"):
            replay_agentic(host, recipe, profiles.load(profile), baseline, fleet)
        return
    recipe = fleet_bench.scaled(recipe, fleet)
    margins = gate.margins(c.config.station.gate, max_throughput_drop, max_ttft_rise)
    with on_host(host, "smoke-bench"):
        base = runs.select([baseline])[0] if baseline else None
        if base:
            gate.require_usable_baseline(base, recipe)
        run = measure.smoke_bench(host, recipe, console, fleet=fleet)
        console.print(report.bench(run))
        if run.fleet:
            console.print(report.fleet(run.fleet))
        console.print(f"Result with provenance: {run.record_path}")
        if run.problems:
            raise StationError("not a valid measurement: " + "; ".join(run.problems), "see bench.log beside it")
        if base:
            gate.require_no_regression(base, runs.entry(run.run_id), margins)
            console.print(f"[green]No regression[/] against {baseline} (margins {margins}).", highlight=False)


def replay_agentic(
    host: str, recipe: recipes.Recipe, profile: profiles.AgenticProfile, baseline: str, fleet: fleet_bench.Fleet | None
) -> None:
    if baseline:
        raise StationError("--baseline gates the random profile only", "drop --baseline, or --profile random")
    run = measure.agentic_bench(host, recipe, fleet_bench.scaled_profile(profile, fleet), console, fleet)
    console.print(report.agentic(run))
    if run.fleet:
        console.print(report.fleet(run.fleet))
    console.print(f"Result with provenance: {run.record_path}")
    if run.problems:
        raise StationError("not a valid measurement: " + "; ".join(run.problems), "see aiperf/aiperf.log beside it")


@task(
    name="ladder",
    help={
        "host": HOST_HELP,
        "recipe": "Ladder recipe name under recipes/ or a path; default: cpu-ladder",
        "steps": "Only these steps, comma-separated (e.g. 0,3,5); default: all",
        "fresh": "Start over instead of resuming an unfinished run of the same ladder",
    },
)
def run_ladder(c, host=None, recipe="cpu-ladder", steps="", fresh=False):
    """Deploy and benchmark a ladder's steps one by one, then compare them side by side; resumes when interrupted."""
    host, _ = host_and_recipe(c, host)
    with on_host(host, "ladder"):
        definition = recipes.load_ladder(recipe)
        try:
            done = ladder.run(host, definition, ladder.select_steps(definition, steps), fresh, console)
        except KeyboardInterrupt:
            raise Exit("Interrupted: run the same command again to resume at the unfinished step.", 130) from None
        report_file, chart_file = ladder_report.write(done, definition)
        console.print(ladder_report.table(done))
        console.print(f"Report: {report_file}\nChart: {chart_file}")


@task(
    help={
        "host": HOST_HELP,
        "recipe": RECIPE_HELP + " (the one its live engine runs: the trials start from it)",
        "profile": "Agentic traffic profile the trials replay (name under recipes/profiles/ or a path); "
        "default: the recipe's own. With --traffic, the sessions (turns, think time) the captured traffic is "
        "replayed in",
        "traffic": "Tune to captured traffic (invoke profile-capture): 'latest' for the host's last capture, or "
        "its file; its lengths, prefix-cache hits and load while busy are replayed",
        "space": "Search space: flags with choices or ranges, objective, constraints (name under recipes/spaces/ "
        "or a path)",
        "trials": "Trials to run (default 12); a configuration sampled twice is measured once",
        "ab_rounds": "Rounds of the interleaved re-measurement of the best trial against the running recipe "
        "(default 2: A B A B)",
        "fresh": "Start over instead of resuming an unfinished tune with the same settings",
    }
)
def tune(c, host=None, recipe=None, profile="", traffic="", space="", trials=12, ab_rounds=2, fresh=False):
    """Search engine flags for a traffic profile on an engine held back beside the live one (which keeps serving);
    measure the best against the running recipe (A B A B) and write the winner as a recipe; resumes when stopped."""
    host, recipe = host_and_recipe(c, host, recipe)
    with on_host(host, "tune"):
        if not space:
            raise StationError(
                "tune needs a search space", f"e.g. --space cpu-agentic ({', '.join(spaces.available())})"
            )
        chosen = tuning.replay_for(host, recipe, profile, traffic)
        try:
            done = tuning.tune(host, recipe, spaces.load(space), chosen, int(trials), int(ab_rounds), fresh, console)
        except KeyboardInterrupt:
            raise Exit("Interrupted: run the same command again to resume the search.", 130) from None
        console.print(f"Report: {done.folder / 'report.md'}\nChart: {done.folder / 'pareto.png'}")
        if done.verdict:
            console.print(f"Verdict: {done.verdict.said}")
        if done.winner:
            console.print(f"Winner: {paths.RESULTS / done.winner}")


@task(
    name="check-recipe",
    help={
        "recipe": RECIPE_HELP + "; a ladder checks every step; several, comma-separated, are checked in one run",
        "host": "Check inside the pinned image on this inventory host; default: here, in a local image of that vLLM",
    },
)
def check_recipe(c, recipe=None, host=None):
    """Check every flag of a recipe with the pinned vLLM's own argument parser; changes nothing."""
    recipe = recipe or c.config.station.recipe
    with user_errors():
        labelled = recipes.load_all_labelled([name.strip() for name in recipe.split(",") if name.strip()])
    if host:
        with on_host(host, "check-recipe"):
            actions.check_args(host, labelled, console)
        console.print(f"vLLM on {host} accepts every argument of {len(labelled)} recipe(s) in {recipe}.")
        return
    with user_errors():
        checked = argcheck.check(labelled, console)
        for _, verdicts in checked:
            for verdict in verdicts:
                console.print(
                    f"  {'[green]ok[/]' if verdict.ok else '[red]rejected[/]'}  {verdict.describe()}", highlight=False
                )
        argcheck.require_valid(checked)
        console.print(f"vLLM in {' and '.join(image for image, _ in checked)} accepts every argument of {recipe}.")


@task(
    help={
        "recipe": RECIPE_HELP + "; a ladder fits every step",
        "gpu_memory_gib": "Memory of one GPU, in GiB (a GB300: 252; an H100: 80)",
    }
)
def fit(c, recipe=None, gpu_memory_gib=0.0):
    """Whether a recipe fits a GPU: weights, Mamba state, overhead and the KV cache left, from the model's card."""
    recipe = recipe or c.config.station.recipe
    with user_errors():
        labelled = recipes.load_labelled(recipe)
        if not labelled[0][1].engine.container.gpus:
            for dtype in ("bfloat16", "float32"):
                tokens = fitting.cpu_kv_tokens(labelled[0][1], dtype)
                console.print(f"{recipe} on a CPU: its KV cache holds {tokens:,} tokens in {dtype}")
            return
        if float(gpu_memory_gib) <= 0:
            raise StationError("fit needs the GPU's memory", "give it: --gpu-memory-gib 252 (a GB300)")
        fitted = [(label, fitting.fit(chosen, float(gpu_memory_gib))) for label, chosen in labelled]
        console.print(report.fits(fitted))
        fitting.require_fits([done for _, done in fitted])


@task(
    name="report",
    help={"run": "Run id(s), comma-separated", "last": "The last N runs (default 10)", "host": "Only this host's runs"},
)
def write_report(c, run="", last=10, host=""):
    """Write a markdown report with charts (throughput, latency, power against throughput) of stored runs."""
    with user_errors():
        entries = runs.select(run.split(",") if run else None, int(last), host)
        path = run_report.write_report(entries)
        console.print(f"Report of {len(entries)} run(s): {path}")


@task(help={"a": "Run id A (the reference)", "b": "Run id B"})
def compare(c, a, b):
    """Two runs side by side, with B/A ratios; also written as markdown."""
    with user_errors():
        console.print(run_report.comparison_table(a, b))
        console.print(f"Written to {run_report.write_comparison(a, b)}")


@task(
    name="cost",
    help={
        "run": "Run id whose measured output throughput to price (or use --tokens-per-s)",
        "tokens_per_s": "Output tokens/s, instead of a run",
        "published": "Reproduce the published 66% claim from station's documented inputs",
        "utilisation": "Share of hours the host serves at that rate, 0-1 (default 1)",
        "gpu_hour_price": "USD per hour for the host (rental), or give capex, lifetime and power",
        "capex": "USD paid for the host",
        "lifetime_years": "Years the capex is spread over",
        "power_kw": "Average draw in kW (default: the run's measured GPU power)",
        "power_price_kwh": "USD per kWh",
        "api_price": "USD per million output tokens from an API, to compare against",
    },
)
def price(
    c,
    run="",
    tokens_per_s=None,
    published=False,
    utilisation=1.0,
    gpu_hour_price=None,
    capex=None,
    lifetime_years=None,
    power_kw=None,
    power_price_kwh=None,
    api_price=None,
):
    """Cost per million output tokens self-hosted at a measured throughput, against an API; break-even utilisation."""
    with user_errors():
        if published:
            scenario = cost.scenario(**cost.PUBLISHED_CLAIM)
        else:
            scenario = cost.of_run(
                runs.select([run])[0] if run else None,
                output_tokens_per_s=tokens_per_s,
                utilisation=utilisation,
                api_price_per_mtok=api_price,
                gpu_hour_price=gpu_hour_price,
                capex=capex,
                lifetime_years=lifetime_years,
                power_kw=power_kw,
                power_price_kwh=power_price_kwh,
            )
        console.print(report.cost(scenario, cost.compute(scenario)))


@task(
    name="accuracy",
    help={
        "host": HOST_HELP,
        "recipe": "Ladder recipe whose steps to compare; default: cpu-ladder",
        "steps": "The two steps A,B (the same step twice checks determinism)",
        "min_exact_match": "Fail below this share of identical answers (default 0.9)",
        "max_logprob_diff": "Fail above this mean top-k log-probability difference (default 0.05)",
        "lm_eval_tasks": "Also run these lm-eval tasks against each step (needs lm-eval and its data sets)",
    },
)
def check_accuracy(
    c, host=None, recipe="cpu-ladder", steps="", min_exact_match=0.9, max_logprob_diff=0.05, lm_eval_tasks=""
):
    """Accuracy drift between two steps: fixed prompts at temperature 0, compared token by token."""
    host, _ = host_and_recipe(c, host)
    with on_host(host, "accuracy"):
        definition = recipes.load_ladder(recipe)
        pair = accuracy.step_pair(definition, steps or "0,1")
        thresholds = accuracy.Thresholds(float(min_exact_match), float(max_logprob_diff))
        done = accuracy.run(host, definition, pair, thresholds, console, lm_eval_tasks)
        console.print(report.drift(done))
        if done.problems:
            raise StationError(
                "accuracy drift beyond the thresholds: " + "; ".join(done.problems), f"details: {done.folder}"
            )


WINDOW_HELP = "How far back to read the live traffic (30s, 5m, 1h, 1d); default: 1h"


@task(name="profile-capture", help={"host": HOST_HELP, "window": WINDOW_HELP})
def profile_capture(c, host=None, window="1h"):
    """Capture the live traffic (lengths, rate, concurrency, cache hits) as a profile; it becomes the reference."""
    host, _ = host_and_recipe(c, host)
    with on_host(host, "profile-capture"):
        profile, path = capture.capture_traffic(host, window, console)
        console.print(report.traffic_profile(profile, path))


@task(
    name="profile-drift",
    help={"host": HOST_HELP, "window": WINDOW_HELP, "against": "A captured profile file; default: the host's latest"},
)
def profile_drift(c, host=None, window="1h", against=""):
    """Compare the live traffic's shape with a captured profile; exits non-zero when it has drifted."""
    host, _ = host_and_recipe(c, host)
    with user_errors():
        reference, drifts = capture.traffic_drift(host, window, against, console)
        threshold = traffic.drift_ratio()
        console.print(report.traffic_drift(reference, drifts, threshold))
        moved = [row.quantity for row in drifts if row.beyond(threshold)]
        if moved:
            raise StationError(f"the traffic on {host} has drifted: {', '.join(moved)}", "tune for it, or capture it")


@task(help={"host": HOSTS_HELP})
def status(c, host=None):
    """Show station's containers on each host and Prometheus' scrape targets; a host that cannot answer is named."""
    host, _ = host_and_recipe(c, host)
    with user_errors():
        found, failed = actions.statuses(inventory.targets(host), console)
        for answered in found:
            console.print(report.status(answered))
        if failed:
            raise each.failures("status", failed)


@task(help={"host": HOSTS_HELP})
def down(c, host=None):
    """Remove station's containers from a host; results, secrets and Prometheus data stay."""

    def down_on(host: str, out: Console) -> None:
        removed = actions.down(host, out).changed
        out.print(f"Removed station's containers from {host}." if removed else f"Nothing ran on {host}.")

    on_each_host(c, host, "down", down_on)


@task(help={"host": HOST_HELP})
def unlock(c, host=None):
    """Free a host's lock left by a command whose controller is gone (it crashed, or another machine lost its way)."""
    host, _ = host_and_recipe(c, host)
    with on_host(host, "unlock"):
        held = actions.unlock(host, console)
        said = f"was held by {lock.describe(held)}; it is free now" if held else "was free"
        console.print(f"{host}'s lock {said}.", highlight=False)


FLEET_HOST_HELP = "A host of a fleet, not the one running its router (station_fleet_router)"


@contextmanager
def on_fleet_host(host: str, command: str) -> Iterator[None]:
    """As on_host, for a command that takes a host of a fleet out of its router's rotation or puts it back: it holds
    that host's lock and the lock of the host whose router it changes."""
    with user_errors():
        router = rotation.router_of(host)
    with on_host(host, command, router):
        yield


@task(help={"host": FLEET_HOST_HELP})
def drain(c, host=None):
    """Take a host of a fleet out of its router's rotation for maintenance: no new request, those it has finished."""
    host, _ = host_and_recipe(c, host)
    with on_fleet_host(host, "drain"):
        drained = rotation.drain(host, console)
    console.print(
        f"{host} is out of {drained.router}'s router after {drained.seconds:.0f} s, its requests finished; "
        f"the router sends to {', '.join(drained.workers) or 'no engine'}. `invoke undrain --host {host}` puts it "
        "back.",
        highlight=False,
    )


@task(help={"host": FLEET_HOST_HELP})
def undrain(c, host=None):
    """Put a drained host of a fleet back in its router's rotation, once its engine passes the health check."""
    host, _ = host_and_recipe(c, host)
    with on_fleet_host(host, "undrain"):
        back = rotation.undrain(host, console)
    console.print(
        f"{host} is back in {back.router}'s router; it sends to {', '.join(back.workers)}.",
        highlight=False,
    )


@task(name="tunnel", help={"host": HOST_HELP, "print_only": "Print the ssh command instead of running it"})
def open_tunnel(c, host=None, print_only=False):
    """Forward the host's services (API, Prometheus, Grafana, exporters) to this machine's loopback over SSH."""
    host, _ = host_and_recipe(c, host)
    with user_errors():
        connection = tunnel.describe(host, console)
        if connection["connection"] == "local":
            console.print(f"{host} is this machine: its services are already on this loopback.")
            return
        argv = tunnel.ssh_argv(connection)
        for forward in tunnel.forwards(connection["settings"]):
            console.print(f"  {forward.service}: http://127.0.0.1:{forward.port}")
        console.print(" ".join(shlex.quote(part) for part in argv), highlight=False, soft_wrap=True)
        if not print_only:
            console.print("Forwarding; Ctrl-C stops.")
            os.execvp(argv[0], argv)


@task(
    name="export",
    help={
        "to": "Where the recipe is to run: k8s (plain manifests for a cluster that schedules GPUs)",
        "recipe": RECIPE_HELP,
        "image": "Engine image the cluster pulls, by digest; default: the recipe's, when it is not built by station",
        "router_image": "vLLM router image the cluster pulls, by digest (push station's build: no published one)",
        "namespace": "Namespace of every object (default: station)",
        "replicas": "Engines (default: 1); the router finds each by label",
        "cpu": "CPU each engine requests, e.g. 16",
        "memory": "Memory each engine requests, e.g. 64Gi",
        "model_cache_claim": "PersistentVolumeClaim that keeps the weights across restarts (default: none, emptyDir)",
        "kubernetes": f"Kubernetes version whose schemas validate the output (default: {k8s.KUBERNETES_VERSION})",
        "out": "File to write (default: results/exports/RECIPE.k8s.yaml)",
    },
)
def export(
    c,
    to,
    recipe=None,
    image="",
    router_image="",
    namespace="",
    replicas=1,
    cpu="",
    memory="",
    model_cache_claim="",
    kubernetes="",
    out="",
):
    """Render a recipe for Kubernetes, validated offline; writes one manifest file, touches no cluster."""
    with user_errors():
        if to != "k8s":
            raise StationError(f"cannot export to {to!r}", "the one target is k8s: invoke export --to k8s")
        chosen = recipes.load(recipe or c.config.station.recipe)
        where = k8s.placement(
            chosen,
            engine_image=image,
            router_image=router_image,
            namespace=namespace,
            replicas=int(replicas),
            cpu=cpu,
            memory=memory,
            model_cache_claim=model_cache_claim,
            kubernetes=kubernetes,
        )
        path = Path(out) if out else paths.RESULTS / "exports" / f"{chosen.name}.k8s.yaml"
        rendered = k8s.export(chosen, where, path)
        console.print(f"{len(rendered)} objects for {chosen.name} in namespace {where.namespace}, validated: {path}")


SIM_HELP = "Simulated host, of the inventory's sims group (default: sim)"


@task(name="sim-up", help={"name": SIM_HELP})
def sim_up(c, name="sim"):
    """Start a simulated host (a Debian container reached over SSH, no GPU) for trying provision and deploy."""
    with user_errors():
        sim.up(console, name)


@task(name="sim-down", help={"name": SIM_HELP})
def sim_down(c, name="sim"):
    """Remove a simulated host and its Docker data."""
    with user_errors():
        sim.down(console, name)


ns = Collection(
    provision,
    bundle,
    deploy,
    promote,
    check_agents,
    smoke_bench,
    run_ladder,
    check_recipe,
    fit,
    write_report,
    compare,
    price,
    check_accuracy,
    profile_capture,
    profile_drift,
    tune,
    export,
    status,
    down,
    drain,
    undrain,
    unlock,
    open_tunnel,
    sim_up,
    sim_down,
)
ns.configure(
    {
        "station": {
            "host": "local",
            "recipe": "cpu-smoke",
            # The regression gate's margins (smoke-bench --baseline), in percent; override in invoke.yaml
            "gate": dataclasses.asdict(gate.Margins()),
        }
    }
)
