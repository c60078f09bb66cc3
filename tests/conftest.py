"""Shared fixtures: recipes written to temporary files, the repository's paths.

The suite never touches the user's own results/ or .station/, nor the user's station deployment on this machine:
before station is imported, results and controller state are moved to a temporary folder (station/paths.py reads
STATION_RESULTS_DIR and STATION_STATE_DIR), which the CLI the integration tests run inherits; the suite deploys the
local host under names, ports and a data folder of its own (tests/fixtures/inventory/host_vars/local.yml); and the
session fails if either of the user's folders, or the user's deployment (tests/users_deployment.py), changed while it
ran. The sandbox is removed when the
session ends (a full run leaves gigabytes there: image archives, caches); a
failed session keeps its logs and results to read.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

# The process that starts the run makes the sandbox; its xdist workers inherit it through the environment. They share
# the controller's state (its caches, built images' wheels, secrets per host) as the commands of two hosts would, and
# keep results apart, so that each deployment's tests read their own runs.
SANDBOX = Path(os.environ.get("STATION_TESTS_SANDBOX") or tempfile.mkdtemp(prefix="station-tests-"))
WORKER = os.environ.get("PYTEST_XDIST_WORKER")
os.environ["STATION_TESTS_SANDBOX"] = str(SANDBOX)
os.environ["STATION_RESULTS_DIR"] = str(SANDBOX / "results" / (WORKER or "main"))
os.environ["STATION_STATE_DIR"] = str(SANDBOX / "state")

from station import paths  # noqa: E402
from station.bench import bench_result, provenance, runs  # noqa: E402  (after the environment above)
from station.bench.records import (  # noqa: E402
    EngineFacts,
    GpuDevice,
    GpuFacts,
    HostFacts,
    HostMachine,
    IndexEntry,
    RunRecord,
)
from station.bench.telemetry import TelemetrySummary  # noqa: E402
from station.deploy import inventory  # noqa: E402
from station.recipes import recipe  # noqa: E402
from tests import timings, users_deployment  # noqa: E402
from tests.users_deployment import snapshot  # noqa: E402  (tests import it from here)

USER_FOLDERS = (paths.ROOT / "results", paths.ROOT / ".station")
# What the suite adds to the shipped inventory's hosts, for every command it runs
SUITE_INVENTORY = paths.ROOT / "tests" / "fixtures" / "inventory" / "suite.yml"


def inventory_sources(*extra: Path) -> str:
    """ANSIBLE_INVENTORY: the shipped inventory, the suite's beside it, then any `extra` sources."""
    return ",".join(str(source) for source in (paths.ANSIBLE / "inventory" / "hosts.yml", SUITE_INVENTORY, *extra))


os.environ["ANSIBLE_INVENTORY"] = inventory_sources()


def host_section(output: str, command: str, host: str) -> str:
    """What a fleet command printed for one host: the lines under its rule (── deploy on dgx01 ──), to the next."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("─") and f" {command} on {host} " in line)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("─")), len(lines))
    return "\n".join(lines[start + 1 : end])


def ansible_module(relative: str) -> Any:
    """A Python file of ansible/ (a module, filter or role file Ansible runs), imported to test its functions."""
    path = paths.ANSIBLE / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_module(name: str) -> subprocess.CompletedProcess[str]:
    """One of station's Ansible modules run on this machine as Ansible runs it (the `ansible` command, station's
    config); its JSON result in stdout."""
    return subprocess.run(
        [str(paths.ROOT / ".venv" / "bin" / "ansible"), "localhost", "-m", name],
        cwd=paths.ANSIBLE,
        capture_output=True,
        text=True,
        check=False,
        env=os.environ | {"ANSIBLE_CONFIG": str(paths.ANSIBLE / "ansible.cfg"), "ANSIBLE_STDOUT_CALLBACK": "default"},
    )


_BEFORE = {folder: snapshot(folder) for folder in USER_FOLDERS}
USERS_DEPLOYMENT_BEFORE = users_deployment.state()
TIMINGS = pytest.StashKey[list[str]]()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if the user's results/ or .station/, or the user's own deployment on this machine, changed under
    it; then clear the sandbox. The process that started the run does this, once its workers have finished."""
    if WORKER:
        return
    touched = [str(folder) for folder in USER_FOLDERS if snapshot(folder) != _BEFORE[folder]]
    touched += users_deployment.differences(USERS_DEPLOYMENT_BEFORE, users_deployment.state())
    if touched:
        session.config.get_terminal_writer().line(f"the suite changed the user's {'; '.join(touched)}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    session.config.stash[TIMINGS] = timings.summary(SANDBOX, paths.LOGS)
    clear_sandbox(keep_evidence=session.exitstatus != pytest.ExitCode.OK)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """Just before pytest's durations: the station commands and Ansible tasks that took longest (tests/timings.py)."""
    if lines := config.stash.get(TIMINGS, None):
        terminalreporter.section("where the time went")
        for line in lines:
            terminalreporter.line(line)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's scope scheduling, with a deployment as the scope: each folder under tests/integration/ goes whole to one
    worker, in file order (its modules share its deployment); every other test goes to whichever worker is free."""
    from xdist.scheduler import LoadScopeScheduling

    class ByDeployment(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            folder, _, rest = nodeid.removeprefix("tests/integration/").partition("/")
            return f"tests/integration/{folder}" if nodeid.startswith("tests/integration/") and rest else nodeid

    return ByDeployment(config, log)


BULKY = ("state/bundle", "state/cache")


def clear_sandbox(keep_evidence: bool) -> None:
    """Remove the sandbox; a failed run keeps all of it but the bulky image archives and caches."""
    for part in BULKY if keep_evidence else ("",):
        shutil.rmtree(SANDBOX / part, ignore_errors=True)


FIXTURES = Path(__file__).parent / "fixtures"


def indexed_run(**fields: object) -> IndexEntry:
    """An index line of a valid cpu-smoke run on one H200 (r1: 1,000 tok/s, TTFT p99 2 s), with `fields` changed."""
    valid = {
        "run_id": "r1",
        "date": "2026-11-29T10:00:00+00:00",
        "kind": "smoke-bench",
        "host": "local",
        "recipe": "cpu-smoke",
        "vllm_version": "0.32.0",
        "gpu": "1x NVIDIA H200",
        "output_throughput": 1000.0,
        "p99_ttft_ms": 2000.0,
        "failed": 0,
    }
    return IndexEntry.model_validate(valid | fields)


def cpu_facts() -> dict[str, Any]:
    """This machine's CPU as station_cpu_facts reads it on a host: the local host, and the simulated hosts (containers
    on this machine: the same CPU)."""
    return ansible_module("library/station_cpu_facts.py").cpu_facts()


def this_machine() -> HostMachine:
    """The `local` host as a run records it here: this machine's CPU, read by the module the bench role runs."""
    cpu = cpu_facts()
    return HostMachine(
        name="local", cpu=cpu["model"], cpu_count=os.cpu_count(), cpu_flags=cpu["flags"], cpu_bfloat16=cpu["bfloat16"]
    )


def stored_run(
    run_id: str,
    throughput: float = 1000,
    power: float | None = None,
    problems: tuple[str, ...] = (),
    of: str = "cpu-smoke",
    machine: HostMachine | None = None,
) -> RunRecord:
    """A run of recipe `of` (cpu-smoke) written to results/ (wherever the test points paths.RESULTS): the fixture
    benchmark's figures at `throughput`, with GPU power when `power` is given, on this machine or `machine`."""
    smoke = recipe.load(of)
    metrics = bench_result.parse(FIXTURES / "bench-result.json").model_copy(update={"output_throughput": throughput})
    gpu = GpuFacts(present=True, count=1, gpus=[GpuDevice(name="NVIDIA H200")]) if power else GpuFacts(present=False)
    facts = HostFacts(host=machine or this_machine(), gpu=gpu, engine=EngineFacts(image_id="sha256:abc"))
    per_joule = 2.5 if power else None
    record = RunRecord(
        run_id=run_id,
        kind="smoke-bench",
        metrics=metrics,
        problems=list(problems),
        telemetry=TelemetrySummary(present=bool(power), avg_power_w=power, output_tokens_per_joule=per_joule),
        provenance=provenance.record(smoke, "local", facts),
    )
    runs.write(record)
    return record


@pytest.fixture
def cpu_smoke_data() -> dict[str, Any]:
    """The shipped cpu-smoke recipe as plain data, to mutate."""
    return yaml.safe_load((paths.RECIPES / "cpu-smoke.yml").read_text())


@pytest.fixture
def write_recipe(tmp_path: Path) -> Callable[[dict[str, Any]], Path]:
    def write(data: dict[str, Any]) -> Path:
        path = tmp_path / "recipe.yml"
        path.write_text(yaml.safe_dump(copy.deepcopy(data), sort_keys=False))
        return path

    return write


@pytest.fixture
def inventory_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[dict[str, Any]], None]]:
    """Set: the shipped inventory with these groups beside it, read afresh by station.deploy.inventory."""

    def add(groups: dict[str, Any]) -> None:
        extra = tmp_path / "extra-inventory.yml"
        extra.write_text(yaml.safe_dump(groups))
        monkeypatch.setenv("ANSIBLE_INVENTORY", inventory_sources(extra))
        inventory._inventory.cache_clear()

    yield add
    inventory._inventory.cache_clear()


@pytest.fixture
def shipped_inventory(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The shipped inventory alone, without the suite's (which moves the local host's names and ports), read afresh."""
    monkeypatch.setenv("ANSIBLE_INVENTORY", str(paths.ANSIBLE / "inventory" / "hosts.yml"))
    inventory._inventory.cache_clear()
    yield
    inventory._inventory.cache_clear()
