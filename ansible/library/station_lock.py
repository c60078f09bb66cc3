#!/usr/bin/python
"""Ansible module: the host's side of station's per-host lock, for commands from more than one controller."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager

DOCUMENTATION = r"""
module: station_lock
short_description: Take or free the host's station lock, naming who holds it
description:
  - The controller holds an flock for each host it runs a command against; this file carries the same claim to the
    host, so a command from another controller (another operator's machine) is refused while one runs.
  - A lock held by this controller (same machine and state folder) is taken over: the controller's own flock
    proves its holder has ended, however it ended.
  - A command that ends frees it; one whose controller died leaves it, for `invoke unlock` to free.
  - Never reported as changed, it is bookkeeping, not configuration, so an idempotent run stays changed=0.
options:
  path:
    description: The lock file.
    type: path
    required: true
  holder:
    description: Who takes or frees it (token, command, started, pid, controller, state).
    type: dict
    required: true
  state:
    description: present takes it, absent frees it.
    type: str
    choices: [present, absent]
    default: present
  force:
    description: With state=absent, free it whoever holds it.
    type: bool
    default: false
author: station
"""

RETURN = r"""
busy:
  description: True when another controller's command holds it (the task then fails).
  returned: always
  type: bool
held_by:
  description: The holder found before this call, or null when the lock was free.
  returned: always
  type: dict
"""


@contextmanager
def _locked(path: str) -> Iterator[object]:
    """The lock file opened and flocked: two controllers' checks and writes run one at a time."""
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        yield handle


def _read(handle) -> dict | None:
    try:
        held = json.loads(handle.read())
    except ValueError:
        return None
    return held if isinstance(held, dict) and held.get("token") else None


def _write(handle, holder: dict | None) -> None:
    handle.seek(0)
    handle.truncate()
    if holder:
        handle.write(json.dumps(holder))
    handle.flush()
    os.fsync(handle.fileno())


def _same_controller(a: dict, b: dict) -> bool:
    return (a.get("controller"), a.get("state")) == (b.get("controller"), b.get("state"))


def describe(holder: dict) -> str:
    return (
        f"invoke {holder.get('command')} started at {holder.get('started')} by pid {holder.get('pid')}"
        f" on {holder.get('controller')}"
    )


def take(path: str, holder: dict) -> dict:
    with _locked(path) as handle:
        held = _read(handle)
        if held and held["token"] != holder["token"] and not _same_controller(held, holder):
            return {"busy": True, "held_by": held}
        if held != holder:
            _write(handle, holder)
        return {"busy": False, "held_by": held}


def free(path: str, holder: dict, force: bool = False) -> dict:
    with _locked(path) as handle:
        held = _read(handle)
        if held and (force or held["token"] == holder["token"]):
            _write(handle, None)
        return {"busy": False, "held_by": held}


def main() -> None:
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "holder": {"type": "dict", "required": True},
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "force": {"type": "bool", "default": False},
        }
    )
    params = module.params
    if params["state"] == "absent":
        module.exit_json(changed=False, **free(params["path"], params["holder"], params["force"]))
    result = take(params["path"], params["holder"])
    if result["busy"]:
        module.fail_json(msg=f"busy: {describe(result['held_by'])}", **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
