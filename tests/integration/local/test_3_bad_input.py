"""Bad input: a clear error, what to do, and nothing changed on the host."""

from __future__ import annotations

import json
import os
import re
import socket

import pytest
import yaml

from station import paths
from tests.conftest import FIXTURES
from tests.integration.conftest import ENGINE, LOCAL_DATA_DIR, invoke, succeeded


@pytest.fixture
def engine_id(docker_client, first_deploy) -> str:
    return docker_client.containers.get(ENGINE).id


def _failed(run, *expected: str) -> None:
    assert run.returncode == 1, run.output
    assert "Traceback" not in run.output
    for text in expected:
        assert text in run.output, run.output


def test_unknown_recipe_lists_the_available_ones() -> None:
    _failed(invoke("deploy", "--recipe", "no-such-recipe"), "unknown recipe 'no-such-recipe'", "cpu-smoke")


def test_malformed_recipe_names_the_field(tmp_path, cpu_smoke_data) -> None:
    cpu_smoke_data["engine"]["image"] = "station.invalid/vllm-cpu:latest"
    path = tmp_path / "bad.yml"
    path.write_text(yaml.safe_dump(cpu_smoke_data))
    _failed(invoke("deploy", "--recipe", str(path)), "engine.image: 'station.invalid/vllm-cpu:latest' uses 'latest'")


def test_unknown_host_lists_the_inventory() -> None:
    _failed(invoke("deploy", "--host", "nope"), "unknown host or group 'nope'", "local")


def test_docker_not_running_says_how_to_start_it(engine_id, docker_client) -> None:
    run = invoke("deploy", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    _failed(run, "Docker engine is not reachable", "apt-get install docker.io", "dockerd")
    assert docker_client.containers.get(ENGINE).id == engine_id


def test_taken_port_names_its_holder_and_changes_nothing(tmp_path, engine_id, docker_client) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        inventory = tmp_path / "porttest.yml"
        inventory.write_text(
            yaml.safe_dump(
                {
                    "offline": {
                        "hosts": {
                            "porttest": {
                                "ansible_connection": "local",
                                "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                                "station_become": False,  # as local: this machine's user, no sudo
                                "vllm_server_port": port,
                            }
                        }
                    }
                }
            )
        )
        run = invoke(
            "deploy",
            "--host",
            "porttest",
            env={"ANSIBLE_INVENTORY": f"{paths.ANSIBLE / 'inventory' / 'hosts.yml'},{inventory}"},
        )
    _failed(run, f"Port {port} on porttest is already taken by", f"(pid {os.getpid()})", "set vllm_server_port")
    assert docker_client.containers.get(ENGINE).id == engine_id
    assert not (paths.SECRETS / "porttest").exists()


def test_benchmarking_a_recipe_that_is_not_deployed_is_refused(tmp_path, cpu_smoke_data, engine_id, docker_client):
    cpu_smoke_data["engine"]["args"]["max-num-seqs"] = 128
    path = tmp_path / "other.yml"
    path.write_text(yaml.safe_dump(cpu_smoke_data))
    _failed(invoke("smoke-bench", "--recipe", str(path)), "Deploy the recipe you want to measure first")
    assert docker_client.containers.get(ENGINE).id == engine_id


@pytest.fixture
def cpu_ladder_data() -> dict:
    return yaml.safe_load((paths.RECIPES / "cpu-ladder.yml").read_text())


def _ladder_file(tmp_path, data: dict, step: int, args: dict):
    data["steps"][step]["args"] = args
    path = tmp_path / "ladder.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_misspelt_flag_stops_the_ladder_naming_step_flag_and_spelling(
    tmp_path, cpu_ladder_data, engine_id, docker_client
) -> None:
    path = _ladder_file(tmp_path, cpu_ladder_data, 2, {"max-num-batched-token": 8192})
    run = invoke("ladder", "--recipe", str(path), "--fresh")
    _failed(
        run,
        "step 2 (batched-token budget 8192): --max-num-batched-token: unrecognized argument",
        "nearest valid spelling: --max-num-batched-tokens",
        "nothing was changed on local",
    )
    assert re.search(r"--max-num-batched-tokens\s+Fix the recipe's engine\.args", run.output), "one problem per line"
    assert docker_client.containers.get(ENGINE).id == engine_id


def test_a_bad_value_stops_a_deploy_naming_the_flag(tmp_path, cpu_ladder_data, engine_id, docker_client) -> None:
    path = _ladder_file(tmp_path, cpu_ladder_data, 4, {"performance-mode": "fastest"})
    run = invoke("deploy", "--recipe", f"{path}:4")
    _failed(run, "cpu-ladder-step4: --performance-mode: argument --performance-mode: invalid choice: 'fastest'")
    assert docker_client.containers.get(ENGINE).id == engine_id


# Every command that changes, measures or builds for a host takes its lock: refused at once while another holds it
BUSY_REFUSED = [["deploy"], ["smoke-bench"], ["down"], ["check-recipe"], ["profile-capture"], ["bundle"]]


@pytest.mark.parametrize("command", BUSY_REFUSED)
def test_a_second_command_on_a_busy_host_is_refused(engine_id, docker_client, command: list[str]) -> None:
    from station.deploy import lock

    with lock.host("local", "ladder"):
        run = invoke(*command, "--host", "local")
    _failed(run, "local is busy: invoke ladder started at", f"by pid {os.getpid()}", "nothing was changed")
    assert docker_client.containers.get(ENGINE).id == engine_id


# A command of another operator's machine, as its claim reads in the host's lock file (ansible/library/station_lock.py)
ANOTHER_CONTROLLERS = {"token": "f00d", "command": "smoke-bench", "started": "2026-12-01T20:00:00+00:00", "pid": 4242,
                       "controller": "laptop-b", "state": "/home/op/station/.station"}  # fmt: skip


@pytest.fixture
def held_by_another_controller():
    """local's lock file, claimed by a command of another controller; freed afterwards, whatever the test did."""
    path = LOCAL_DATA_DIR / "station.lock"
    path.write_text(json.dumps(ANOTHER_CONTROLLERS))
    yield path
    path.write_text("")


@pytest.mark.parametrize("command", [["deploy"], ["smoke-bench"], ["down"]])
def test_a_command_of_another_controller_holds_the_host(
    engine_id, docker_client, held_by_another_controller, command: list[str]
) -> None:
    run = invoke(*command, "--host", "local")
    _failed(run, "local is busy: invoke smoke-bench started at 2026-12-01T20:00:00+00:00 by pid 4242 on laptop-b",
            "nothing was changed", "`invoke unlock --host local` frees the host")  # fmt: skip
    assert docker_client.containers.get(ENGINE).id == engine_id
    assert json.loads(held_by_another_controller.read_text()) == ANOTHER_CONTROLLERS  # neither taken over nor freed


def test_unlock_frees_a_host_whose_command_lost_its_controller(held_by_another_controller) -> None:
    run = succeeded(invoke("unlock", "--host", "local"))
    assert "local's lock was held by invoke smoke-bench started at 2026-12-01T20:00:00+00:00 by pid 4242 on " \
           "laptop-b; it is free now." in run.output  # fmt: skip
    assert held_by_another_controller.read_text() == ""
    assert "local's lock was free." in succeeded(invoke("unlock", "--host", "local")).output


def test_remote_code_without_a_pinned_commit_is_refused_before_anything_runs(engine_id, docker_client) -> None:
    run = invoke("deploy", "--host", "local", "--recipe", str(FIXTURES / "recipes" / "remote-code-unpinned.yml"))
    _failed(run, "sets trust-remote-code", "pins no commit (model.revision: none)", "40-character commit")
    assert docker_client.containers.get(ENGINE).id == engine_id
