"""Monitoring against the real thing: Prometheus scraping the CPU engine under the benchmark's load.

Every dashboard query and every rule reading vLLM metrics is evaluated at the
moment the benchmark finished; panels that cannot have data without a GPU are
listed in OFF_GPU, not skipped. promtool checks the deployed configuration and
runs the alert test cases against the deployed rules.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
import requests
import yaml
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console

from station import paths
from station.deploy import playbook
from station.generators import dashboards
from tests.conftest import FIXTURES
from tests.integration.conftest import (
    LOCAL_DATA_DIR,
    NODE_EXPORTER,
    NODE_EXPORTER_URL,
    PROMETHEUS,
    PROMETHEUS_URL,
    promtool,
    wait_for,
)

# Panels and rules with no data off-GPU: no MTP head on the tiny model, no DCGM exporter.
OFF_GPU_PANELS = {
    "MTP acceptance rate",
    "MTP mean acceptance length",
    "Output tokens per joule",
    "Energy cost per million output tokens",
    *(panel.title for panel in dashboards.GPU),
}
OFF_GPU_RULES = {
    "host:vllm_spec_decode_acceptance:ratio_rate5m",
    "host:dcgm_power_usage_watts:sum",
    "host:station_output_tokens_per_joule:ratio_rate1m",
    "GpuXidError",
    "GpuThrottled",
}
# Panels of series exported only after an event: vllm-router counts retries from the first (none here, one engine
# serving throughout); test_6_fleet sees one on the fleet of simulated hosts.
UNTIL_EVENT_PANELS = {"Router: retries/s"}
# Rules that read the reference `invoke profile-capture` writes: no data on a host whose traffic was never
# captured, as on a fresh machine (their promtool tests give them a reference; test_3_traffic captures one).
UNTIL_CAPTURED = {"TrafficProfileDrift"}
GRAFANA_UID = 472


def query(expr: str, at: str) -> list[dict]:
    response = requests.get(f"{PROMETHEUS_URL}/api/v1/query", params={"query": expr, "time": at}, timeout=30)
    assert response.status_code == 200, f"{expr}: {response.text}"
    return response.json()["data"]["result"]


def grafana_to_promql(expr: str, window: str = "1m") -> str:
    prices = yaml.safe_load(dashboards.PRICES.read_text())
    expr = expr.replace("$__rate_interval", window).replace('host=~"$host"', 'host="local"')
    return re.sub(r"\$(\w+)", lambda m: str(prices[m.group(1)]), expr)


def dashboard_queries() -> list[tuple[str, str]]:
    return [
        (f"{name}: {panel['title']}", target["expr"])
        for name, board in dashboards.generate().items()
        for panel in board["panels"]
        if panel["title"] not in OFF_GPU_PANELS | UNTIL_EVENT_PANELS
        for target in panel.get("targets", [])  # a row has none
    ]


@pytest.fixture(scope="module")
def bench_end(bench) -> str:
    return bench.record["provenance"]["bench"]["finished_at"]


@pytest.fixture(scope="module")
def deployed_rules(bench) -> list[dict]:
    groups = requests.get(f"{PROMETHEUS_URL}/api/v1/rules", timeout=10).json()["data"]["groups"]
    return [rule for group in groups for rule in group["rules"]]


@pytest.mark.parametrize(("panel", "expr"), dashboard_queries(), ids=[p for p, _ in dashboard_queries()])
def test_every_dashboard_query_returns_data_from_the_pinned_vllm(bench_end, panel: str, expr: str) -> None:
    result = query(grafana_to_promql(expr), bench_end)
    assert result, f"{panel}: no data for {expr}"


def test_throughput_and_latency_panels_saw_the_load(bench, bench_end) -> None:
    """Over a window holding the whole run: its first tokens all come in its first seconds."""
    tokens = query(grafana_to_promql(dashboards.SERVING[0].queries[0][0], "5m"), bench_end)
    assert float(tokens[0]["value"][1]) > 0
    ttft_p99 = query(grafana_to_promql(dashboards.SERVING[3].queries[2][0], "5m"), bench_end)
    assert float(ttft_p99[0]["value"][1]) > 0


def test_every_rule_on_vllm_metrics_returns_data(deployed_rules, bench_end) -> None:
    """Recording rules as written; alerts with their comparison opened up: their selectors and joins are tested."""
    checked = 0
    for rule in deployed_rules:
        if rule["name"] in OFF_GPU_RULES | UNTIL_CAPTURED or "vllm" not in rule["query"]:
            continue
        expr = re.sub(r"(==|!=|>=|<=|>|<)\s*[0-9.e+]+", "> -Inf", rule["query"])
        assert query(expr, bench_end), f"{rule['name']}: no data for {expr}"
        checked += 1
    assert checked >= 10


def test_the_lists_of_rules_without_data_name_real_panels_and_rules(deployed_rules) -> None:
    titles = {panel["title"] for board in dashboards.generate().values() for panel in board["panels"]}
    assert titles >= OFF_GPU_PANELS | UNTIL_EVENT_PANELS
    assert {rule["name"] for rule in deployed_rules} >= OFF_GPU_RULES | UNTIL_CAPTURED


def test_the_benchmark_appears_as_a_run_marker(bench, bench_end) -> None:
    markers = query("max_over_time(station_benchmark_running[15m])", bench_end)
    runs = {sample["metric"]["run_id"]: float(sample["value"][1]) for sample in markers}
    assert runs.get(bench.record["run_id"]) == 1.0, runs


def rules_dir() -> Path:
    """The rules Prometheus reads: rules/ in its configuration folder, mounted whole (a file mount goes stale)."""
    mounts = json.loads(subprocess.check_output(["docker", "inspect", PROMETHEUS]))[0]["Mounts"]
    return Path(next(m["Source"] for m in mounts if m["Destination"] == "/etc/prometheus")) / "rules"


def test_promtool_checks_the_deployed_config_and_rules(first_deploy) -> None:
    config = subprocess.run(
        ["docker", "exec", PROMETHEUS, "promtool", "check", "config", "/etc/prometheus/prometheus.yml"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert config.returncode == 0, config.stdout + config.stderr
    assert "SUCCESS: 2 rule files found" in config.stdout + config.stderr


def alert_tests(rules: Path) -> subprocess.CompletedProcess:
    tests = paths.ROOT / "monitoring" / "prometheus" / "tests" / "alerts.test.yml"
    return promtool(
        "test", "rules", "/w/alerts.test.yml", volumes={str(rules): "/w/rules", str(tests): "/w/alerts.test.yml"}
    )


def test_promtool_alert_tests_pass_against_the_deployed_rules(first_deploy) -> None:
    result = alert_tests(rules_dir())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def reload_gauges() -> dict[str, float]:
    """Prometheus' own record of its last configuration reload, from its /metrics."""
    text = requests.get(f"{PROMETHEUS_URL}/metrics", timeout=10).text
    return {
        family.name: family.samples[0].value
        for family in text_string_to_metric_families(text)
        if family.name.startswith("prometheus_config_last_reload_success")
    }


def test_the_reload_handler_reloads_prometheus_in_its_running_container(first_deploy, docker_client) -> None:
    """What a deploy that changes the configuration or rules notifies: a reload, not a restart (samples stay)."""
    started = docker_client.api.inspect_container(PROMETHEUS)["State"]["StartedAt"]
    before = reload_gauges()["prometheus_config_last_reload_success_timestamp_seconds"]
    time.sleep(1)  # the gauge counts whole seconds
    run = playbook.run_file(FIXTURES / "playbooks" / "reload.yml", "local", {}, Console(record=True))
    assert "prometheus : Reload Prometheus" in run.changed_tasks, run.changed_tasks
    after = wait_for(
        lambda: (
            (gauges := reload_gauges())["prometheus_config_last_reload_success_timestamp_seconds"] > before and gauges
        ),
        30,
        "Prometheus to reload",
    )
    assert after["prometheus_config_last_reload_successful"] == 1
    assert docker_client.api.inspect_container(PROMETHEUS)["State"]["StartedAt"] == started


def test_node_exporter_reads_the_host(first_deploy, local_host) -> None:
    metrics = local_host.check_output(f"curl -sf {NODE_EXPORTER_URL}/metrics")
    assert "node_filesystem_avail_bytes" in metrics and 'mountpoint="/"' in metrics


def test_monitoring_images_are_pinned(docker_client, first_deploy) -> None:
    for name in (PROMETHEUS, NODE_EXPORTER):
        container = docker_client.api.inspect_container(name)
        image = container["Config"]["Image"]
        assert not image.endswith(":latest") and ":" in image
        labels = docker_client.images.get(image).labels
        assert "@sha256:" in image or labels.get("io.station.build-digest"), f"{name}: {image} is not pinned"


def grafana_dir() -> Path:
    return LOCAL_DATA_DIR / "grafana"


@pytest.mark.parametrize(
    ("relative", "mode"),
    [
        ("provisioning/datasources/station.yml", 0o640),
        ("provisioning/dashboards/station.yml", 0o640),
        ("dashboards/serving.json", 0o640),
        ("dashboards/gpu.json", 0o640),
        ("dashboards/efficiency.json", 0o640),
        ("secrets/admin_password", 0o600),
        ("secrets", 0o750),
        ("provisioning", 0o750),
    ],
)
def test_grafana_files_are_in_place_owned_by_grafana(first_deploy, local_host, relative: str, mode: int) -> None:
    placed = local_host.file(str(grafana_dir() / relative))
    assert placed.exists
    assert placed.uid == GRAFANA_UID
    assert placed.mode == mode


def test_grafanas_datasource_is_this_hosts_prometheus_by_its_container_name(first_deploy, local_host) -> None:
    placed = yaml.safe_load(local_host.file(str(grafana_dir() / "provisioning/datasources/station.yml")).content_string)
    assert placed["datasources"][0]["url"] == f"http://{PROMETHEUS}:9090"


def test_grafana_admin_password_is_generated_private_and_not_a_default(first_deploy, local_host) -> None:
    controller_copy = paths.SECRETS / "local" / "grafana_admin_password"
    password = controller_copy.read_text().strip()
    assert len(password) == 32 and password.lower() not in {"admin", "password", "grafana"}
    assert controller_copy.stat().st_mode & 0o777 == 0o600
    assert local_host.file(str(grafana_dir() / "secrets" / "admin_password")).content_string == password
    assert password not in first_deploy.output


def test_deploy_reports_grafana_skipped_with_the_reason(first_deploy) -> None:
    assert "Grafana is skipped on local: this host reaches no container registry" in first_deploy.output
    assert "the DCGM exporter is skipped" in first_deploy.output
