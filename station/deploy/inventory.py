"""Read the Ansible inventory (ansible/inventory/) through ansible-inventory itself."""

from __future__ import annotations

import json
import subprocess
from functools import cache
from typing import Any

import yaml

from station import paths
from station.deploy.playbook import ansible_env
from station.errors import StationError


@cache
def _inventory() -> dict[str, Any]:
    result = subprocess.run(
        ["ansible-inventory", "--list"],
        capture_output=True,
        text=True,
        env=ansible_env(),
        cwd=paths.ANSIBLE,
        check=False,
    )
    if result.returncode != 0:
        raise StationError(f"the inventory could not be read:\n{result.stderr.strip()}", "fix ansible/inventory/")
    return json.loads(result.stdout)


def hosts() -> list[str]:
    return sorted(_inventory().get("_meta", {}).get("hostvars", {}))


# The commands whose --host may name a group or a list (station.fleet.each); the others take one host
FLEET_COMMANDS = "provision, deploy, agent-check, status and down"


def _groups(inventory: dict[str, Any]) -> list[str]:
    return sorted(name for name in inventory if name not in ("_meta", "all", "ungrouped"))


def targets(spec: str) -> list[str]:
    """The hosts a --host names: a host, an inventory group (its hosts and its children's), or a comma-separated list
    of either; in the order named, each once."""
    inventory = _inventory()
    known = inventory.get("_meta", {}).get("hostvars", {})
    groups = _groups(inventory)
    found: list[str] = []
    for name in (part.strip() for part in spec.split(",")):
        if name in known:
            members = [name]
        elif name in groups:
            members = _members(inventory, name)
        else:
            raise StationError(
                f"unknown host or group {name!r}",
                f"hosts: {', '.join(hosts())}; groups: {', '.join(groups)} (ansible/inventory/hosts.yml)",
            )
        found += [host for host in members if host not in found]
    return found


def _members(inventory: dict[str, Any], group: str) -> list[str]:
    entry = inventory.get(group, {})
    return [
        *entry.get("hosts", []),
        *(host for child in entry.get("children", []) for host in _members(inventory, child)),
    ]


def host_vars(host: str) -> dict[str, Any]:
    """The host's variables as written in the inventory (not templated)."""
    inventory = _inventory()
    known = inventory.get("_meta", {}).get("hostvars", {})
    if host not in known and (host in _groups(inventory) or "," in host):
        raise StationError(
            f"this command takes one host, and {host!r} names several: {', '.join(targets(host))}",
            f"name one of them; {FLEET_COMMANDS} take a group or a comma-separated list",
        )
    if host not in known:
        raise StationError(
            f"unknown host {host!r}",
            f"hosts in ansible/inventory/hosts.yml: {', '.join(hosts())}; add yours there (see the dgx01 example)",
        )
    return known[host]


def role_default(role: str, name: str) -> Any:
    """A role's default as written in its defaults/main.yml (for values the inventory may leave unset)."""
    defaults = yaml.safe_load((paths.ANSIBLE / "roles" / role / "defaults" / "main.yml").read_text())
    return defaults[name]


def role_var(role: str, name: str) -> Any:
    """A role's own constant as written in its vars/main.yml (what a rendering for elsewhere must agree with)."""
    constants = yaml.safe_load((paths.ANSIBLE / "roles" / role / "vars" / "main.yml").read_text())
    return constants[name]


def setting(settings: dict[str, Any], role: str, name: str) -> Any:
    """A wiring value as a host gets it: its own (`settings`, from the inventory), else the owning role's default."""
    return settings[name] if name in settings else role_default(role, name)


def is_local(host: str) -> bool:
    """True when the host is this machine, so its Docker engine is the controller's."""
    return host_vars(host).get("ansible_connection") == "local"
