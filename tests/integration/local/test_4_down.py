"""`invoke down --host local`: containers go; results, secrets and monitoring data stay."""

from __future__ import annotations

from station import paths
from station.deploy import inventory
from tests import users_deployment
from tests.conftest import USERS_DEPLOYMENT_BEFORE, snapshot
from tests.integration.conftest import ENGINE, LOCAL, PROMETHEUS, invoke, succeeded


def test_the_users_own_deployment_here_is_as_it_was_after_the_suites_deploys(first_deploy) -> None:
    """Its containers (or their absence), network, volumes and data folder, as this worker found them when it started:
    every deploy, promote and candidate of the suite on local ran under the suite's own names and ports."""
    assert users_deployment.differences(USERS_DEPLOYMENT_BEFORE, users_deployment.state()) == []


def test_down_removes_containers_and_keeps_results_and_secrets(docker_client, first_deploy) -> None:
    runs_before = snapshot(paths.RESULTS)  # every file and its time: none may change
    run = succeeded(invoke("down", "--host", "local"))
    assert "Removed station's containers from local." in run.output
    managed = {ENGINE, PROMETHEUS, inventory.setting(LOCAL, "vllm_bench", "vllm_bench_container_name")}
    assert {c.name for c in docker_client.containers.list(all=True)} & managed == set()
    assert LOCAL["station_network_name"] not in {network.name for network in docker_client.networks.list()}
    assert snapshot(paths.RESULTS) == runs_before
    assert (paths.SECRETS / "local" / "vllm_api_key").is_file()
    assert docker_client.volumes.get(inventory.setting(LOCAL, "prometheus", "prometheus_data_volume"))


def test_a_second_down_changes_nothing() -> None:
    assert "Nothing ran on local." in succeeded(invoke("down", "--host", "local")).output


def test_smoke_bench_without_an_engine_fails_and_says_what_to_do() -> None:
    run = invoke("smoke-bench", "--host", "local")
    assert run.returncode == 1
    assert "is not up" in run.output and "invoke deploy --host local" in run.output
