"""The simulated hosts as a fleet's hosts: `sim2` beside `sim`, on their private network, and a fleet command over
SSH into both at once (provision's preflight, which changes nothing on a host).

sim2 is started here and removed at the end of the module; sim is the deployment the other modules share.
"""

from __future__ import annotations

import pytest
from rich.console import Console

from station.deploy import sim
from tests.conftest import host_section
from tests.integration.conftest import Invocation, invoke, succeeded
from tests.integration.sim.conftest import sim_root

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


def test_sim2_is_removed_with_its_data_and_sim_keeps_the_network(sim2, docker_client) -> None:
    sim.down(Console(), "sim2")
    assert not docker_client.containers.list(all=True, filters={"name": f"^{sim2.container}$"})
    assert not docker_client.volumes.list(filters={"name": sim2.docker_volume})
    (network,) = sim.network(docker_client)
    network.reload()
    assert [container.name for container in network.containers] == [sim.host().container]
