"""The simulated host's deployment, shared by every module here: started, provisioned over SSH and deployed once per
session, by the xdist worker that runs this folder."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
import testinfra
import yaml
from rich.console import Console

from station import paths
from station.deploy import inventory, keys, sim
from tests.integration.conftest import Invocation, invoke, succeeded

PLANTED = {"labels": ["planted-by-test=yes"]}  # a daemon.json key the host had before station came
HF_TOKEN = "hf_station_test_token_not_real"
HF_TOKEN_FILE = "/var/lib/station/secrets/hf_token"


def sim_root(command: str, name: str = "sim") -> subprocess.CompletedProcess[str]:
    """A command as root inside a simulated host: test set-up only, never how station reaches it."""
    argv = ["docker", "exec", sim.host(name).container, "sh", "-c", command]
    return subprocess.run(argv, capture_output=True, text=True)


# Run on the host with a URL (and a key, when one follows): what its own services answer there, where nothing of this
# machine's reaches.
READ_URL = (
    "import sys, urllib.request; "
    "key = {'Authorization': 'Bearer ' + sys.argv[2]} if sys.argv[2:] else {}; "
    "print(urllib.request.urlopen(urllib.request.Request(sys.argv[1], headers=key), timeout=10).read().decode())"
)


def read_on(name: str, role: str, port_setting: str, path: str) -> str:
    """What a service of a simulated host answers at `path`, asked on the host (its loopback) with the fleet's key."""
    port = inventory.setting(inventory.host_vars(name), role, port_setting)
    asked = sim_root(f"python3 -c \"{READ_URL}\" 'http://127.0.0.1:{port}{path}' {keys.api_key(name)}", name)
    assert asked.returncode == 0, asked.stdout + asked.stderr
    return asked.stdout


def smoke_with_bench(folder: Path, name: str, **bench: int) -> str:
    """cpu-smoke with a benchmark of its own, as a recipe file: the same engine (a bench checks only that), a
    smaller load than the published shape cpu-smoke mirrors."""
    data = yaml.safe_load((paths.RECIPES / "cpu-smoke.yml").read_text())
    data["name"], data["bench"] = name, data["bench"] | bench
    path = folder / f"{name}.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))  # the engine arguments in order: the same hash
    return str(path)


def sim_prometheus(expr: str) -> dict[tuple[str, str], float]:
    """An instant query of sim's Prometheus, the fleet's: each series' (host, job) and value."""
    found = json.loads(read_on("sim", "prometheus", "prometheus_port", f"/api/v1/query?{urlencode({'query': expr})}"))
    return {
        (series["metric"].get("host", ""), series["metric"].get("job", "")): float(series["value"][1])
        for series in found["data"]["result"]
    }


def sim_router_workers() -> list[str]:
    """The engines sim's router sends requests to."""
    return json.loads(read_on("sim", "vllm_router", "vllm_router_port", "/list_workers"))["urls"]


def sim_router_health() -> dict[str, bool]:
    """Each engine sim's router lists, and whether it passes the router's health checks."""
    found = json.loads(read_on("sim", "vllm_router", "vllm_router_port", "/workers"))["workers"]
    return {worker["url"]: worker["is_healthy"] for worker in found}


def fleet_engine_url(name: str) -> str:
    """Where the fleet's router (sim's) reaches a simulated host's live engine: on the host's private address."""
    return f"http://{sim.host(name).address}:{inventory.host_vars(name)['station_fleet_engine_port']}"


def sim_container_id(name: str) -> str:
    """The id of the container of that name on sim; empty when there is none."""
    return sim_root(f"docker ps --all --quiet --no-trunc --filter name=^{name}$").stdout.strip()


@pytest.fixture(scope="session")
def sim_engine() -> str:
    """The engine's container name on sim, which its inventory moves off the role's default."""
    return inventory.setting(inventory.host_vars("sim"), "vllm_server", "vllm_server_container_name")


@pytest.fixture(scope="session")
def fresh_sim(docker_client) -> Iterator[None]:
    """sim started afresh for this run, and removed with its data when the run ends: nothing of the suite's is left
    running on the machine."""
    sim.down(Console())
    sim.up(Console())
    sim_root(f"mkdir -p /etc/docker && echo '{json.dumps(PLANTED)}' > /etc/docker/daemon.json")
    yield
    sim.down(Console())


@pytest.fixture(scope="session")
def provisioned(fresh_sim) -> tuple[Invocation, Invocation]:
    """`invoke provision --host sim`, twice."""
    first = succeeded(invoke("provision", "--host", "sim"))
    second = succeeded(invoke("provision", "--host", "sim"))
    print(f"provision on sim: first {first.seconds:.0f} s, second {second.seconds:.0f} s")
    return first, second


@pytest.fixture(scope="session")
def sim_host(provisioned):
    """testinfra over SSH, with the same key and pinned host key Ansible uses."""
    secrets = paths.SECRETS / "sim"
    return testinfra.get_host(
        f"ssh://{sim.USER}@127.0.0.1:{sim.host().ssh_port}",
        ssh_identity_file=str(secrets / "id_ed25519"),
        ssh_extra_args=f"-o UserKnownHostsFile={secrets / 'known_hosts'} -o StrictHostKeyChecking=yes",
        sudo=True,
    )


@pytest.fixture(scope="session")
def deployed_on_sim(provisioned) -> Invocation:
    """`invoke deploy --host sim`, with the token file `provision` writes when host_tuning_hf_token is set."""
    folder = HF_TOKEN_FILE.rsplit("/", 1)[0]
    sim_root(f"mkdir -p {folder} && echo {HF_TOKEN} > {HF_TOKEN_FILE} && chmod 600 {HF_TOKEN_FILE}")
    run = succeeded(invoke("deploy", "--host", "sim"))
    print(f"deploy on sim (bundle delivered): {run.seconds:.0f} s")
    return run
