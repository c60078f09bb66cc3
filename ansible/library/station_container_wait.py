#!/usr/bin/python
"""Ansible module: wait, in one run, until a container's health is decided or it stops."""

from __future__ import annotations

import json
import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: station_container_wait
short_description: Wait in one module run until a container's health is decided, or it stops
description:
  - An C(until) loop of docker_container_info runs one module per look, about half a second of CPU each on a 2-core
    host, taken from the engine being waited for (a CPU engine's start took a minute of such looks every 2 s). This
    module looks with C(docker inspect) in a loop inside a single run.
  - Returns the container's State and RestartCount only; its configuration carries secrets (the API key).
options:
  name:
    description: The container.
    type: str
    required: true
  until:
    description:
      - C(settled) waits for a health verdict (healthy or unhealthy), a stop or a restart.
      - C(stopped) waits until it no longer runs.
      - A container that does not exist has settled and stopped.
    type: str
    choices: [settled, stopped]
    default: settled
  timeout:
    description: Seconds to wait at most; the last state is returned either way (timed_out says which).
    type: int
    required: true
  interval:
    description: Seconds between looks.
    type: float
    default: 1
author: station
"""

RETURN = r"""
container:
  description: C(State) and C(RestartCount) as docker inspect reports them; empty when the container does not exist.
  type: dict
  returned: always
timed_out:
  description: Whether the wait ended at its timeout rather than at the condition.
  type: bool
  returned: always
waited_s:
  description: Seconds waited.
  type: float
  returned: always
"""


def settled(container: dict[str, Any]) -> bool:
    state = container["State"]
    health = (state.get("Health") or {}).get("Status")
    return health in ("healthy", "unhealthy") or not state.get("Running") or container["RestartCount"] > 0


def stopped(container: dict[str, Any]) -> bool:
    return not container["State"].get("Running")


CONDITIONS = {"settled": settled, "stopped": stopped}


def inspect(module: AnsibleModule, name: str) -> dict[str, Any]:
    """The container's State and RestartCount; {} when there is no such container."""
    rc, out, _ = module.run_command(["docker", "inspect", "--type", "container", name])
    if rc != 0:
        return {}
    found = json.loads(out)[0]
    return {"State": found["State"], "RestartCount": found["RestartCount"]}


def wait(module: AnsibleModule, name: str, until: str, timeout: int, interval: float) -> dict[str, Any]:
    started = time.monotonic()
    while True:
        container = inspect(module, name)
        done = not container or CONDITIONS[until](container)
        waited = time.monotonic() - started
        if done or waited >= timeout:
            return {"container": container, "timed_out": not done, "waited_s": round(waited, 1)}
        time.sleep(interval)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "until": {"type": "str", "choices": list(CONDITIONS), "default": "settled"},
            "timeout": {"type": "int", "required": True},
            "interval": {"type": "float", "default": 1},
        },
        supports_check_mode=True,
    )
    params = module.params
    module.exit_json(
        changed=False, **wait(module, params["name"], params["until"], params["timeout"], params["interval"])
    )


if __name__ == "__main__":
    main()
