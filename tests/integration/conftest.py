"""Integration fixtures: the real CLI against `local`, a real Docker engine, real vLLM and Prometheus.

Each folder below is one deployment its tests share: local/ the local host's, sim/ the simulated host's
(its own conftest starts it); controller/ needs none (commands that run on the controller alone). One xdist worker
runs each folder, in file order (tests/conftest.py), so the two deployments progress side by side; no module needs
another to have run first.

Nothing here skips: without a Docker engine these tests fail and say how to
start one (.ci/run starts it in CI). Deselect them with `-m "not integration"`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import openai
import pytest
import requests
import testinfra
import yaml
from docker.errors import NotFound
from prometheus_client.parser import text_string_to_metric_families

from station import paths
from station.bench import traffic
from station.deploy import images, inventory, sim
from station.errors import StationError
from station.recipes import recipe, render
from tests import timings
from tests.conftest import SANDBOX, cpu_facts, inventory_sources

# The suite's deployment on the local host, under names and ports of its own (tests/fixtures/inventory/host_vars/)
LOCAL = inventory.host_vars("local")
ENGINE = inventory.setting(LOCAL, "vllm_server", "vllm_server_container_name")
ROUTER = inventory.setting(LOCAL, "vllm_router", "vllm_router_container_name")
PROMETHEUS = inventory.setting(LOCAL, "prometheus", "prometheus_container_name")
NODE_EXPORTER = inventory.setting(LOCAL, "node_exporter", "node_exporter_container_name")
LOCAL_CONTAINERS = (ENGINE, ROUTER, PROMETHEUS)
EVERY_CONTAINERS_LOGS = (
    'for c in $(docker ps --all --format "{{.Names}}"); do echo "== $c"; docker logs --tail 30 "$c" 2>&1; done'
)
PROMETHEUS_URL = f"http://127.0.0.1:{inventory.setting(LOCAL, 'prometheus', 'prometheus_port')}"
API_URL = f"http://127.0.0.1:{inventory.setting(LOCAL, 'vllm_router', 'vllm_router_port')}"  # what clients use
ENGINE_URL = f"http://127.0.0.1:{inventory.setting(LOCAL, 'vllm_server', 'vllm_server_port')}"  # the engine behind it
NODE_EXPORTER_URL = f"http://127.0.0.1:{inventory.setting(LOCAL, 'node_exporter', 'node_exporter_port')}"
# The endpoint the README's examples name: a user's, on the router's default port
README_API_URL = f"http://127.0.0.1:{inventory.role_default('vllm_router', 'vllm_router_port')}"
LOCAL_DATA_DIR = Path.home() / ".local" / "share" / "station-tests"  # its station_data_dir, as the host_vars render it
# Prometheus' scrape interval on station's hosts, in seconds (the prometheus role's default)
SCRAPE_S = traffic.seconds(inventory.role_default("prometheus", "prometheus_scrape_interval"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.integration)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """On failure, attach the last log lines of the containers the test concerns: they usually explain it."""
    report = yield
    if report.failed and "integration" in item.keywords:
        report.sections.extend(failure_logs(Path(item.fspath)))
    return report


def failure_logs(test_file: Path) -> list[tuple[str, str]]:
    """The local host's containers for its tests; for the simulated hosts' tests, every container on each simulated
    host that runs (station's are inside them, where this machine's Docker does not see them); none for the tests of
    commands that run on the controller alone."""
    if test_file.parent.name == "controller":
        return []
    if test_file.parent.name == "local":
        return [(f"docker logs {name}", _output(["docker", "logs", "--tail", "30", name])) for name in LOCAL_CONTAINERS]
    sections = []
    for name in inventory.targets(sim.GROUP):
        container = sim.host(name).container
        if _output(["docker", "ps", "--quiet", "--filter", f"name=^{container}$"]).strip():
            logs = _output(["docker", "exec", container, "sh", "-c", EVERY_CONTAINERS_LOGS])
            sections.append((f"docker logs of every container on {name}", logs))
    return sections


def at_the_suites_endpoint(readme_code: str) -> str:
    """Code from the README, pointed at the suite's endpoint instead of a user's."""
    assert README_API_URL in readme_code, readme_code
    return readme_code.replace(README_API_URL, API_URL)


def agent_check_rows(output: str, capability: str) -> list[str]:
    """The lines of agent-check's tables in a command's output that report `capability`."""
    return [line for line in output.splitlines() if line.startswith(f"│ {capability} ")]


def _output(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    return done.stdout + done.stderr


@dataclass(frozen=True)
class Invocation:
    argv: list[str]
    returncode: int
    output: str
    seconds: float


CLI_ENV = {"COLUMNS": "250"}  # a wide console: messages are not wrapped


def cli(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "invoke"), *args]


def invoke(*args: str, env: dict[str, str] | None = None, timeout: int = 1800) -> Invocation:
    """Run the real CLI, as a user would."""
    argv = cli(*args)
    started = time.monotonic()
    result = subprocess.run(
        argv,
        cwd=paths.ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=os.environ | CLI_ENV | (env or {}),
    )
    seconds = time.monotonic() - started
    timings.record(SANDBOX, argv, seconds, result.returncode)
    return Invocation(argv, result.returncode, result.stdout + result.stderr, seconds)


def succeeded(run: Invocation) -> Invocation:
    assert run.returncode == 0, f"{' '.join(run.argv)} exited {run.returncode}:\n{run.output}"
    return run


def extra_inventory(tmp_path: Path, hosts: dict[str, dict[str, Any]], group: str = "offline") -> dict[str, str]:
    """Env that adds hosts to the inventory (in `group`), or variables to hosts it has, for one invocation. The
    variables go in a host_vars folder of their own, the last inventory read: they win over the suite's (a host's
    variables in an inventory file lose to any host_vars folder's)."""
    folder = tmp_path / "extra-inventory"
    (folder / "host_vars").mkdir(parents=True, exist_ok=True)
    (folder / "hosts.yml").write_text(yaml.safe_dump({group: {"hosts": dict.fromkeys(hosts)}}))
    for host, variables in hosts.items():
        (folder / "host_vars" / f"{host}.yml").write_text(yaml.safe_dump(variables))
    return {"ANSIBLE_INVENTORY": inventory_sources(folder / "hosts.yml")}


def serving(docker_client: docker.DockerClient, served: recipe.Recipe) -> bool:
    """True when the live engine runs `served`'s configuration (a module's clean-up has nothing to put back)."""
    try:
        return docker_client.containers.get(ENGINE).labels.get("io.station.config") == render.config_hash(served)
    except NotFound:
        return False


def cpu_dtype() -> str:
    """The dtype an engine that follows its host's CPU runs on this machine (the local host; the simulated hosts are
    containers on it), as the module the vllm_server role runs reads it."""
    return cpu_facts()["dtype"]


def engine_argv(served: recipe.Recipe) -> list[str]:
    """The arguments the engine container runs: the recipe's rendered ones, the dtype the host's CPU chose where the
    recipe leaves it to the CPU, then the drain timeout the role adds."""
    drain = inventory.role_default("vllm_server", "vllm_server_drain_timeout_s")
    dtype = ["--dtype", cpu_dtype()] if served.engine.follows_cpu else []
    return [*render.serve_argv(served), *dtype, "--shutdown-timeout", str(drain)]


@pytest.fixture(scope="session")
def docker_client() -> docker.DockerClient:
    try:
        return images.client()
    except StationError as error:
        pytest.fail(f"integration tests need a Docker engine: {error}")


@pytest.fixture(scope="session")
def smoke() -> recipe.Recipe:
    return recipe.load("cpu-smoke")


@pytest.fixture(scope="session")
def first_deploy(docker_client) -> Invocation:
    """`invoke deploy --host local`, images built when missing (the slow part on a fresh machine)."""
    return succeeded(invoke("deploy", "--host", "local"))


@pytest.fixture(scope="session")
def engine(docker_client, first_deploy) -> dict[str, Any]:
    return docker_client.api.inspect_container(ENGINE)


@pytest.fixture(scope="session")
def api_key(first_deploy) -> str:
    return (paths.SECRETS / "local" / "vllm_api_key").read_text().strip()


@pytest.fixture(scope="session")
def local_host():
    return testinfra.get_host("local://")


@pytest.fixture(scope="session")
def engine_host(first_deploy):
    """testinfra inside the engine container."""
    return testinfra.get_host(f"docker://{ENGINE}")


def promtool(*args: str, volumes: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """promtool from the deployed Prometheus' own image, without a network."""
    image = json.loads(subprocess.check_output(["docker", "inspect", PROMETHEUS]))[0]["Config"]["Image"]
    mounts = [arg for host, inside in (volumes or {}).items() for arg in ("-v", f"{host}:{inside}:ro")]
    argv = ["docker", "run", "--rm", "--network", "none", *mounts, "--entrypoint", "promtool", image, *args]
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def prometheus_query(query: str) -> float:
    """Sum of an instant query's samples (0 when there are none)."""
    response = requests.get(f"{PROMETHEUS_URL}/api/v1/query", params={"query": query}, timeout=10)
    response.raise_for_status()
    return sum(float(sample["value"][1]) for sample in response.json()["data"]["result"])


def router_workers() -> list[str]:
    """The engines the router sends requests to, asked with the key its gate wants on every route but /health."""
    key = (paths.SECRETS / "local" / "vllm_api_key").read_text().strip()
    asked = requests.get(f"{API_URL}/list_workers", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    asked.raise_for_status()
    return asked.json()["urls"]


def router_failed_sends(docker_client) -> float:
    """Requests the router sent to an engine that failed them (refused the connection, answered a server error, cut
    the answer): its circuit breaker's failure outcomes, counted with the breaker off too. Read from the router's
    metrics port, which only station's network reaches."""
    read = "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:29000/metrics').read().decode())"
    metrics = docker_client.containers.get(ROUTER).exec_run(["python3", "-c", read]).output.decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
        if sample.name == "vllm_router_cb_outcomes_total" and sample.labels.get("outcome") == "failure"
    )


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(1)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


def engine_target_up() -> bool:
    return prometheus_query('up{job="vllm"}') == 1


@dataclass(frozen=True)
class BenchOutcome:
    invocation: Invocation
    record: dict[str, Any]
    run_dir: Path
    tokens_before: float
    tokens_after: float


GENERATED = "vllm:generation_tokens_total"


SMALL_BENCH = paths.ROOT / "tests" / "fixtures" / "recipes" / "cpu-smoke-small-bench.yml"


@pytest.fixture(scope="session")
def small_bench() -> recipe.Recipe:
    """cpu-smoke's engine with a small benchmark: what the tests measure it with."""
    return recipe.load(str(SMALL_BENCH))


@pytest.fixture(scope="session")
def bench(first_deploy, small_bench) -> BenchOutcome:
    """One `invoke smoke-bench --host local` of cpu-smoke's engine (a small benchmark), with Prometheus' token counter
    read before and after."""
    wait_for(engine_target_up, 60, "Prometheus to scrape the engine")
    before_runs = set(paths.RESULTS.glob(f"*-local-{small_bench.name}"))
    tokens_before = prometheus_query(GENERATED)
    run = succeeded(invoke("smoke-bench", "--host", "local", "--recipe", str(SMALL_BENCH)))
    (run_dir,) = set(paths.RESULTS.glob(f"*-local-{small_bench.name}")) - before_runs
    record = json.loads((run_dir / "result.json").read_text())
    expected = tokens_before + record["metrics"]["total_output_tokens"]
    tokens_after = wait_for(
        lambda: (value := prometheus_query(GENERATED)) >= expected and value,
        30,
        "Prometheus to see the benchmark's tokens",
    )
    return BenchOutcome(run, record, run_dir, tokens_before, tokens_after)


@dataclass
class StreamingClients:
    """Clients streaming short chats through the router, in threads, until stopped; every outcome counted.

    Paced: on 2 cores the candidate engine starts beside the live one, so a client that keeps the live engine
    busy all the time would starve the candidate's start. Two threads with 2 s between chats keep a request in flight
    or arriving every second, through any swap (tens of seconds); at 0.5 s they kept the live engine's worker at
    50-80% of a core for the whole of a promotion (12 minutes in CI)."""

    api_key: str
    model: str
    url: str = API_URL  # the router's, as this machine reaches it
    threads: int = 2
    pause_s: float = 2.0
    timeout_s: float = 120
    # Each chat its own prompt: a cache-aware router sends chats no engine has cached to the least loaded one, so
    # clients at once spread over a fleet; the same prompt stays on the engine that cached it.
    distinct: bool = False
    served: int = 0
    longest_s: float = 0.0  # the longest a served chat took (one held at the router waits out an engine swap)
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _chat_until_stopped(self) -> None:
        client = openai.OpenAI(base_url=f"{self.url}/v1", api_key=self.api_key, max_retries=0, timeout=self.timeout_s)
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                stream = client.chat.completions.create(
                    model=self.model,
                    messages=[{"role": "user", "content": f"hi {uuid.uuid4()}" if self.distinct else "hi"}],
                    max_tokens=32,
                    stream=True,
                    extra_body={"ignore_eos": True},  # random weights may end early; every answer is 32 tokens
                )
                finish = [chunk.choices[0].finish_reason for chunk in stream if chunk.choices][-1]
                if finish != "length":
                    raise AssertionError(f"finish reason {finish}")
                with self._lock:
                    self.served += 1
                    self.longest_s = max(self.longest_s, time.monotonic() - started)
                self._stop.wait(self.pause_s)
            except Exception as error:  # every failure a client would see is the measurement
                with self._lock:
                    self.failures.append(f"{type(error).__name__}: {error} (after {time.monotonic() - started:.1f} s)")

    def __enter__(self) -> StreamingClients:
        self._workers = [threading.Thread(target=self._chat_until_stopped) for _ in range(self.threads)]
        for worker in self._workers:
            worker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for worker in self._workers:
            worker.join(timeout=self.timeout_s + 60)
