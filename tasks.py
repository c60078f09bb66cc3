"""station's command line: `invoke --list` shows the tasks, `invoke --help TASK` their options.

Thin by design: each task parses its arguments, calls station.actions, prints.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from invoke import Collection, Context, Exit, task
from rich.console import Console

from station import actions, report, sim
from station.errors import StationError

console = Console()

HOST_HELP = "Inventory host (ansible/inventory/hosts.yml); default: local, this machine"
RECIPE_HELP = "Recipe name under recipes/ or a path to a recipe file; default: cpu-smoke"
TAGS_HELP = "Only these stages, comma-separated (preflight, nvidia_driver, docker_engine, ...)"


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn a StationError into the problem, what to do, and exit code 1 — no traceback."""
    try:
        yield
    except StationError as error:
        console.print(f"[red]error:[/] {error.problem}", highlight=False)
        raise Exit(f"  → {error.hint}" if error.hint else "", code=1) from error


def host_and_recipe(c: Context, host: str | None, recipe: str | None = None) -> tuple[str, str]:
    return host or c.config.station.host, recipe or c.config.station.recipe


@task(help={"host": HOST_HELP, "recipe": "Recipe whose GPU needs to check (optional)", "tags": TAGS_HELP})
def provision(c, host=None, recipe=None, tags=""):
    """Take a host to ready: checks, NVIDIA driver, container toolkit, Docker, tuning; a second run changes nothing."""
    host = host or c.config.station.host
    with user_errors():
        done = actions.provision(host, recipe, tags, console)
        console.print(report.provisioning(done))


@task(help={"host": HOST_HELP, "recipe": RECIPE_HELP})
def bundle(c, host=None, recipe=None):
    """Build the offline bundle (images and wheels) a host without registry access needs for a recipe."""
    host, recipe = host_and_recipe(c, host, recipe)
    with user_errors():
        console.print(f"Offline bundle: {actions.build_bundle(host, recipe, console)}")


@task(help={"host": HOST_HELP, "recipe": RECIPE_HELP})
def deploy(c, host=None, recipe=None):
    """Deploy the recipe's engine and Prometheus on a host; a second run changes nothing."""
    host, recipe = host_and_recipe(c, host, recipe)
    with user_errors():
        console.print(report.deployment(actions.deploy(host, recipe, console)))


@task(name="smoke-bench", help={"host": HOST_HELP, "recipe": RECIPE_HELP})
def smoke_bench(c, host=None, recipe=None):
    """Benchmark the deployed engine with the recipe's traffic profile, from the host itself."""
    host, recipe = host_and_recipe(c, host, recipe)
    with user_errors():
        run = actions.smoke_bench(host, recipe, console)
        console.print(report.bench(run))
        console.print(f"Result with provenance: {run.record_path}")
        if run.problems:
            raise StationError("not a valid measurement: " + "; ".join(run.problems), "see bench.log beside it")


@task(help={"host": HOST_HELP})
def status(c, host=None):
    """Show station's containers on a host and Prometheus' scrape targets."""
    host, _ = host_and_recipe(c, host)
    with user_errors():
        console.print(report.status(actions.status(host, console)))


@task(help={"host": HOST_HELP})
def down(c, host=None):
    """Remove station's containers from a host; results, secrets and Prometheus data stay."""
    host, _ = host_and_recipe(c, host)
    with user_errors():
        result = actions.down(host, console)
        console.print(f"Removed station's containers from {host}." if result.changed else f"Nothing ran on {host}.")


@task(name="sim-up")
def sim_up(c):
    """Start the simulated host `sim` (a Debian container reached over SSH, no GPU) for trying provision and deploy."""
    with user_errors():
        sim.up(console)


@task(name="sim-down")
def sim_down(c):
    """Remove the simulated host and its Docker data."""
    with user_errors():
        sim.down(console)


ns = Collection(provision, bundle, deploy, smoke_bench, status, down, sim_up, sim_down)
ns.configure({"station": {"host": "local", "recipe": "cpu-smoke"}})
