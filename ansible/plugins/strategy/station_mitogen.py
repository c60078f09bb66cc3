"""Mitogen's linear strategy (ansible_mitogen's `mitogen_linear`), given as long to reach a local host as an SSH one.

Mitogen starts one Python interpreter on each host and must hear from it before a deadline. Over SSH the deadline is
Ansible's `timeout` (ansible.cfg); a local connection gets a fixed 30 s of Mitogen's own
(mitogen.parent.Options.connect_timeout), which no Ansible setting reaches. On a 2-core controller serving a CPU engine
while an image builds, a full test run saw two playbooks on `local` fail "Connection timed out" at their first task.
Here every connection waits Ansible's `timeout`.
"""

from __future__ import annotations

import ansible_mitogen.loaders
import ansible_mitogen.strategy
import mitogen.parent

from ansible import constants

# Set before the strategy runs: Mitogen's connection process is forked from this one when it does.
mitogen.parent.Options.connect_timeout = float(constants.DEFAULT_TIMEOUT)

Linear = ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)


class StrategyModule(ansible_mitogen.strategy.StrategyMixin, Linear):
    """Ansible's linear strategy, with every task of a host run in the interpreter Mitogen keeps there."""
