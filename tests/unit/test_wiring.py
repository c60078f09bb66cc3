"""Where the CLI reaches a host's services: the owning role's defaults, unless the host's inventory moves them."""

from __future__ import annotations

import pytest

from station.deploy import actions, inventory


@pytest.mark.parametrize("role", ["vllm_router", "prometheus", "grafana"])
def test_a_service_is_where_its_role_puts_it(role: str) -> None:
    address, port = (inventory.role_default(role, f"{role}_{name}") for name in ("bind_address", "port"))
    assert actions.service_url({}, role) == f"http://{address}:{port}"


def test_a_port_moved_in_the_inventory_is_followed() -> None:
    assert actions.service_url({"prometheus_port": 9191}, "prometheus").endswith(":9191")


def test_the_inventory_sets_no_role_wiring_of_its_own(shipped_inventory) -> None:
    """One source: the ports and addresses are the roles' defaults, not retyped in the shipped group variables."""
    shipped = inventory.host_vars("local")
    for role in ("vllm_router", "vllm_server", "prometheus"):
        for name in ("bind_address", "port"):
            assert f"{role}_{name}" not in shipped, f"{role}_{name} is set in the inventory as well as in {role}"
