"""The simulated hosts as a fleet's hosts: `sim2` beside `sim`, on their private network, and a fleet command over
SSH into both at once (provision's preflight, which changes nothing on a host).

sim2 is started here and removed at the end of the module; sim is the deployment the other modules share.
"""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from station.deploy import inventory, keys, sim
from tests.conftest import host_section
from tests.integration.conftest import Invocation, invoke, succeeded
from tests.integration.sim.conftest import READ_URL, sim_root

# Run on a simulated host: the first bytes of the sshd at an address of the private network
SSH_BANNER = "import socket, sys; print(socket.create_connection((sys.argv[1], 22), timeout=5).recv(4).decode())"


@pytest.fixture(scope="module")
def sim2(fresh_sim):
    sim.up(Console(), "sim2")
    yield sim.host("sim2")
    sim.down(Console(), "sim2")


@pytest.fixture(scope="module")
def preflight_on_both(sim2) -> Invocation:
    return succeeded(invoke("provision", "--host", "sims", "--tags", "preflight"))


@pytest.mark.parametrize(("name", "other"), [("sim", "sim2"), ("sim2", "sim")])
def test_each_simulated_host_reaches_the_other_on_the_private_network(sim2, name, other) -> None:
    assert sim.host(name).address in sim_root("hostname -I", name).stdout.split()
    answer = sim_root(f'python3 -c "{SSH_BANNER}" {sim.host(other).address}', name)
    assert answer.stdout.startswith("SSH-"), answer.stdout + answer.stderr


def test_a_fleet_command_reaches_both_over_ssh(preflight_on_both) -> None:
    for name in ("sim", "sim2"):
        assert f"No NVIDIA GPU on {name}" in host_section(preflight_on_both.output, "provision", name)


def test_sims_engine_answers_the_fleet_on_its_private_address_with_the_fleets_key(sim2, deployed_on_sim) -> None:
    """The sims are a fleet with sim's router: sim's engine also listens on its private address, where a router on
    another of the fleet's hosts reaches it, and asks for the key the fleet's hosts share."""
    assert keys.api_key_file("sim2") == keys.api_key_file("sim")
    port = inventory.setting(inventory.host_vars("sim"), "vllm_server", "vllm_server_port")
    models = f"http://{sim.host('sim').address}:{port}/v1/models"
    answer = sim_root(f'python3 -c "{READ_URL}" {models} {keys.api_key("sim2")}', "sim2")
    assert answer.returncode == 0, answer.stdout + answer.stderr
    assert json.loads(answer.stdout)["data"], answer.stdout
    refused = sim_root(f'python3 -c "{READ_URL}" {models}', "sim2")
    assert "HTTP Error 401" in refused.stderr, refused.stdout + refused.stderr


def test_sim2_is_removed_with_its_data_and_sim_keeps_the_network(sim2, docker_client) -> None:
    sim.down(Console(), "sim2")
    assert not docker_client.containers.list(all=True, filters={"name": f"^{sim2.container}$"})
    assert not docker_client.volumes.list(filters={"name": sim2.docker_volume})
    (network,) = sim.network(docker_client)
    network.reload()
    assert [container.name for container in network.containers] == [sim.host().container]
