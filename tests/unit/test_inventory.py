"""What a --host names: a host, a group (with its children's hosts) or a list; a group where one host is asked for."""

from __future__ import annotations

import pytest

from station.deploy import inventory, sim
from station.errors import StationError
from station.fleet import rotation


@pytest.fixture(autouse=True)
def fleet(inventory_with) -> None:
    """The shipped inventory and a fleet of two groups, one the other's child."""
    inventory_with(
        {
            "gpu": {"hosts": {"dgx01": {}, "dgx02": {}}, "children": {"spare": {"hosts": {"dgx03": {}}}}},
            "lab": {"hosts": {"dgx02": {}, "local": {}}},
        }
    )


@pytest.mark.parametrize(
    ("spec", "hosts"),
    [
        ("dgx01", ["dgx01"]),
        ("gpu", ["dgx01", "dgx02", "dgx03"]),
        ("spare", ["dgx03"]),
        ("lab, gpu", ["dgx02", "local", "dgx01", "dgx03"]),
        ("dgx03,dgx03,spare", ["dgx03"]),
    ],
)
def test_a_host_spec_names_each_host_once_in_the_order_named(spec: str, hosts: list[str]) -> None:
    assert inventory.targets(spec) == hosts


def test_an_unknown_name_is_refused_listing_the_hosts_and_groups() -> None:
    with pytest.raises(StationError) as error:
        inventory.targets("gpu,dgx09")
    assert error.value.problem == "unknown host or group 'dgx09'"
    assert "dgx01" in error.value.hint and "groups: gpu, lab, offline, sims, spare" in error.value.hint


@pytest.mark.parametrize("spec", ["gpu", "dgx01,dgx02"])
def test_a_command_that_takes_one_host_refuses_several_naming_them(spec: str) -> None:
    with pytest.raises(StationError) as error:
        inventory.host_vars(spec)
    assert error.value.problem.startswith(f"this command takes one host, and {spec!r} names several: dgx01, dgx02")
    assert inventory.FLEET_COMMANDS in error.value.hint


def test_an_unknown_host_is_still_named_as_one() -> None:
    with pytest.raises(StationError, match="unknown host 'dgx09'"):
        inventory.host_vars("dgx09")


def test_the_simulated_hosts_are_the_sims_group_each_on_the_private_network() -> None:
    hosts = [sim.host(name) for name in inventory.targets(sim.GROUP)]
    assert [host.name for host in hosts] == ["sim", "sim2"]
    assert len({host.ssh_port for host in hosts}) == len({host.address for host in hosts}) == 2
    assert hosts[0].container == "station-sim"


def test_a_host_that_is_no_simulated_one_is_named() -> None:
    with pytest.raises(StationError, match="local is not a simulated host") as error:
        sim.host("local")
    assert "sim, sim2" in error.value.hint


@pytest.mark.parametrize(
    ("host", "said"),
    [("local", "local is in no fleet"), ("sim", "sim runs its fleet's router"), ("nope", "unknown host 'nope'")],
)
def test_only_a_host_of_a_fleet_but_its_routers_can_be_drained(host: str, said: str) -> None:
    with pytest.raises(StationError, match=said):
        rotation.router_of(host)


def test_a_fleets_host_is_drained_on_its_routers_host() -> None:
    assert rotation.router_of("sim2") == "sim"
