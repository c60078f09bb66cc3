#!/usr/bin/python
"""Ansible module: free space on the file system that holds (or will hold) a path."""

from __future__ import annotations

import os

DOCUMENTATION = r"""
module: station_free_space
short_description: Free space where a path lives, even before the path exists
description:
  - Measures the file system of the path's nearest existing ancestor with statvfs.
  - Works where mount facts miss the root file system (containers, overlay roots).
options:
  path:
    description: Folder to measure for.
    type: path
    required: true
author: station
"""

RETURN = r"""
checked:
  description: The existing folder that was measured.
  returned: always
  type: str
free_gb:
  description: Space available to unprivileged users, in GB (10^9 bytes).
  returned: always
  type: float
free_bytes:
  description: The same space, in bytes.
  returned: always
  type: int
device:
  description: The file system's device number; two paths with the same one share their free space.
  returned: always
  type: int
"""


def free_space(path: str) -> dict:
    checked = os.path.abspath(path)
    while not os.path.exists(checked):
        checked = os.path.dirname(checked)
    stats = os.statvfs(checked)
    free = stats.f_bavail * stats.f_frsize
    device = os.stat(checked).st_dev
    return {"checked": checked, "free_gb": round(free / 1000**3, 1), "free_bytes": free, "device": device}


def main() -> None:
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec={"path": {"type": "path", "required": True}}, supports_check_mode=True)
    module.exit_json(changed=False, **free_space(module.params["path"]))


if __name__ == "__main__":
    main()
