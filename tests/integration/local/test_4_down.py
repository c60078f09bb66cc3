"""`invoke down --host local`: containers go; results, secrets and monitoring data stay."""

from __future__ import annotations

from station import paths
from tests.conftest import snapshot
from tests.integration.conftest import invoke, succeeded


def test_down_removes_containers_and_keeps_results_and_secrets(docker_client, first_deploy) -> None:
    runs_before = snapshot(paths.RESULTS)  # every file and its time: none may change
    run = succeeded(invoke("down", "--host", "local"))
    assert "Removed station's containers from local." in run.output
    managed = {"station-vllm", "station-prometheus", "station-bench"}
    assert {c.name for c in docker_client.containers.list(all=True)} & managed == set()
    assert "station" not in {network.name for network in docker_client.networks.list()}  # names= matches a prefix
    assert snapshot(paths.RESULTS) == runs_before
    assert (paths.SECRETS / "local" / "vllm_api_key").is_file()
    assert docker_client.volumes.get("station-prometheus-data")


def test_a_second_down_changes_nothing() -> None:
    assert "Nothing ran on local." in succeeded(invoke("down", "--host", "local")).output


def test_smoke_bench_without_an_engine_fails_and_says_what_to_do() -> None:
    run = invoke("smoke-bench", "--host", "local")
    assert run.returncode == 1
    assert "is not up" in run.output and "invoke deploy --host local" in run.output
