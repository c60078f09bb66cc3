"""The alert rules against their promtool tests, with no deployment: promtool from the Debian package the Prometheus
image installs (.ci/setup extracts it into .venv/bin), the rules rendered with the default thresholds.

tests/integration/local/test_2_monitoring.py runs the same tests against the rules a deploy rendered on a host.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
from ansible.plugins.filter.mathstuff import logarithm

from station import paths
from tests.unit.test_monitoring_files import ALERTS_TEMPLATE, MONITORING, RECORDING, THRESHOLDS

PROMTOOL = Path(sys.executable).parent / "promtool"
ALERT_TESTS = MONITORING / "prometheus" / "tests" / "alerts.test.yml"


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    if not PROMTOOL.is_file():
        pytest.fail(f"{PROMTOOL} is missing: run .ci/setup, which extracts it from Debian's prometheus package")
    return subprocess.run([str(PROMTOOL), *args], cwd=cwd, capture_output=True, text=True, check=False)


def rules_with(tmp_path: Path, **thresholds: object) -> Path:
    """The rules folder as the prometheus role writes it (its template's delimiters, Ansible's own `log` filter), with
    the default thresholds but `thresholds`, and the alert tests beside it (they name rules/alerts.yml)."""
    templates = jinja2.Environment(
        variable_start_string="[[",
        variable_end_string="]]",
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    templates.filters["log"] = logarithm
    alerts = templates.from_string(ALERTS_TEMPLATE.read_text())
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "alerts.yml").write_text(alerts.render(_prometheus_thresholds=THRESHOLDS | thresholds))
    shutil.copy(RECORDING, tmp_path / "rules" / "recording.yml")
    shutil.copy(ALERT_TESTS, tmp_path / "alerts.test.yml")
    return tmp_path


def test_promtool_is_the_version_the_prometheus_image_runs() -> None:
    image = (paths.DOCKER / "prometheus" / "Dockerfile").read_text()
    (version,) = re.findall(r"^ARG PROMETHEUS_VERSION=(\S+)$", image, re.MULTILINE)
    shown = promtool("--version", cwd=paths.ROOT)
    assert f"promtool, version {version}+" in shown.stdout + shown.stderr


def test_the_rules_check(tmp_path) -> None:
    folder = rules_with(tmp_path)
    checked = promtool("check", "rules", "rules/alerts.yml", "rules/recording.yml", cwd=folder)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("SUCCESS") == 2


def test_the_alert_tests_pass_with_the_default_thresholds(tmp_path) -> None:
    result = promtool("test", "rules", "alerts.test.yml", cwd=rules_with(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_alert_tests_fail_when_a_threshold_moves(tmp_path) -> None:
    result = promtool("test", "rules", "alerts.test.yml", cwd=rules_with(tmp_path, kv_cache_usage_ratio=0.99))
    assert result.returncode != 0
    assert "VllmKvCacheNearFull" in result.stdout + result.stderr
