"""Mitogen's linear strategy (ansible_mitogen's `mitogen_linear`), with longer to start on a local host: opt-in, as
STATION_ANSIBLE_STRATEGY=station_mitogen (station/deploy/playbook.py).

Mitogen starts one Python interpreter on each host and must hear from it before a deadline. Over SSH the deadline is
Ansible's `timeout`; a local connection gets Mitogen's own default, 30 s (mitogen.parent.Options.connect_timeout),
which no Ansible setting reaches. On a 2-core controller serving a CPU engine while an image builds, a full test run
saw two playbooks on `local` fail "Connection timed out" at their first task. Here a local connection gets 120 s.
"""

from __future__ import annotations

import ansible_mitogen.loaders
import ansible_mitogen.strategy
import mitogen.parent

LOCAL_CONNECT_TIMEOUT_S = 120.0

# Set before the strategy runs: Mitogen's connection process is forked from this one when it does.
mitogen.parent.Options.connect_timeout = LOCAL_CONNECT_TIMEOUT_S

Linear = ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)


class StrategyModule(ansible_mitogen.strategy.StrategyMixin, Linear):
    """Ansible's linear strategy, with every task of a host run in the interpreter Mitogen keeps there."""
