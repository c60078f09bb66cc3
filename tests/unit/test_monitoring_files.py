"""Monitoring content checked as files: dashboards, rules, thresholds, DCGM counters, provisioning."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from station import paths
from station.generators import dashboards

MONITORING = paths.ROOT / "monitoring"
ALERTS_TEMPLATE = MONITORING / "prometheus" / "rules" / "alerts.yml.j2"
RECORDING = MONITORING / "prometheus" / "rules" / "recording.yml"
THRESHOLDS = yaml.safe_load((MONITORING / "prometheus" / "thresholds.yml").read_text())
ALERT_TESTS = yaml.safe_load((MONITORING / "prometheus" / "tests" / "alerts.test.yml").read_text())
DCGM_FIELD = re.compile(r"\bDCGM_FI_[A-Z0-9_]+\b")


def alert_rules(fill=lambda name: str(THRESHOLDS[name])) -> list[dict]:
    """The alert template's rules, its [[ ... ]] threshold placeholders filled by `fill`."""
    text = re.sub(r"\[\[ _prometheus_thresholds\.(\w+) \]\]", lambda m: fill(m.group(1)), ALERTS_TEMPLATE.read_text())
    return [rule for group in yaml.safe_load(text)["groups"] for rule in group["rules"]]


def dashboard_files() -> dict[str, dict]:
    return {path.name: json.loads(path.read_text()) for path in (MONITORING / "grafana" / "dashboards").glob("*.json")}


def panels() -> list[tuple[str, dict]]:
    """Every panel that queries (rows only group them)."""
    return [
        (name, panel)
        for name, board in dashboard_files().items()
        for panel in board["panels"]
        if panel["type"] != "row"
    ]


def test_committed_dashboards_are_what_the_generator_writes() -> None:
    generated = {name: json.loads(dashboards.render(board)) for name, board in dashboards.generate().items()}
    assert dashboard_files() == generated, "run: python -m station.generators.dashboards"


@pytest.mark.parametrize("name", sorted(dashboard_files()))
def test_dashboard_ids_are_unique_and_datasources_provisioned(name: str) -> None:
    board = dashboard_files()[name]
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    datasource = yaml.safe_load((MONITORING / "grafana" / "provisioning" / "datasources" / "station.yml").read_text())
    uid = datasource["datasources"][0]["uid"]
    for _, panel in filter(lambda found: found[0] == name, panels()):
        assert panel["datasource"]["uid"] == uid, panel["title"]
        assert all(target["datasource"]["uid"] == uid for target in panel["targets"]), panel["title"]


@pytest.mark.parametrize(("board", "panel"), panels(), ids=lambda value: value if isinstance(value, str) else "")
def test_no_panel_hard_codes_a_host_or_instance(board: str, panel: dict) -> None:
    for target in panel["targets"]:
        assert "instance=" not in target["expr"] and "localhost" not in target["expr"]
        assert '$host"' in target["expr"] or "vector(" in target["expr"], target["expr"]


def test_every_dashboard_annotates_benchmark_runs() -> None:
    for board in dashboard_files().values():
        assert any("station_benchmark_running" in a["expr"] for a in board["annotations"]["list"])


def test_every_dcgm_field_used_is_in_the_pinned_counters_file() -> None:
    counters = MONITORING / "dcgm" / "counters.csv"
    declared = set()
    for line in counters.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            field, kind, help_text = (part.strip() for part in line.split(",", 2))
            assert kind in {"gauge", "counter"} and help_text, line
            declared.add(field)
    sources = [p for p in [*MONITORING.rglob("*"), *(paths.ROOT / "station").rglob("*.py")] if p.is_file()]
    used = {field for path in sources if path != counters for field in DCGM_FIELD.findall(path.read_text())}
    assert used, "no DCGM field found: the check would prove nothing"
    assert used <= declared, f"not in {counters.name}: {sorted(used - declared)}"


def test_panels_of_series_exported_only_after_an_event_say_none_yet_when_empty() -> None:
    """dcgm-exporter 4.5.3-4.8.2 exports no XID or clock-event series before an event (its issues 700 and 646)."""
    panels = {panel["title"]: panel for panel in dashboard_files()["gpu.json"]["panels"]}
    for title in ("XID errors", "Throttling (clock event reasons)"):
        assert panels[title]["fieldConfig"]["defaults"]["noValue"] == "none reported yet", title
    assert "noValue" not in panels["GPU utilisation"]["fieldConfig"]["defaults"]  # exported always: empty is wrong
    serving = {panel["title"]: panel for panel in dashboard_files()["serving.json"]["panels"]}
    assert serving["Router: retries/s"]["fieldConfig"]["defaults"]["noValue"] == "none reported yet"


def test_the_serving_dashboard_ends_with_the_fleet_row_and_its_panels() -> None:
    board = dashboard_files()["serving.json"]["panels"]
    row = next(i for i, panel in enumerate(board) if panel["type"] == "row")
    assert board[row]["title"].startswith("Fleet")
    titles = [panel["title"] for panel in board[row + 1 :]]
    assert titles[:2] == ["Fleet: output tokens/s", "Fleet: each host's share of output tokens"]
    assert all(panel["gridPos"]["y"] > board[row]["gridPos"]["y"] for panel in board[row + 1 :])


def test_the_counters_file_adds_the_profiling_counters_the_default_leaves_out() -> None:
    text = (MONITORING / "dcgm" / "counters.csv").read_text()
    for field in ("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_DEV_XID_ERRORS"):
        assert re.search(rf"^{field},", text, re.MULTILINE), field


def test_every_threshold_is_used_and_every_placeholder_defined() -> None:
    used = set(re.findall(r"\[\[ _prometheus_thresholds\.(\w+) \]\]", ALERTS_TEMPLATE.read_text()))
    assert used == set(THRESHOLDS)


def test_thresholds_do_not_appear_inside_expressions_as_literals() -> None:
    for rule in alert_rules(fill=lambda name: f"THRESHOLD_{name}"):
        literals = [value for value in re.findall(r"[<>]=? *([0-9.]+)", rule["expr"]) if float(value) != 0]
        assert not literals, f"{rule['alert']}: move {literals} to thresholds.yml"
    assert alert_rules(fill=lambda name: "THRESHOLD")[3]["expr"].endswith("> THRESHOLD")


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda rule: rule["alert"])
def test_every_alert_has_severity_for_window_summary_description_and_runbook(rule: dict) -> None:
    assert rule["labels"]["severity"] in {"critical", "warning"}
    assert re.fullmatch(r"[0-9]+[smh]", str(rule["for"]))
    assert rule["annotations"]["summary"] and rule["annotations"]["description"]
    page, anchor = rule["annotations"]["runbook"].split("#", 1)
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.+)$", (paths.ROOT / page).read_text(), re.MULTILINE)
    }
    assert anchor in anchors, f"{page} has no runbook section for {rule['alert']}"


def test_every_alert_has_a_promtool_test_case() -> None:
    tested = {case["alertname"] for test in ALERT_TESTS["tests"] for case in test["alert_rule_test"]}
    assert tested == {rule["alert"] for rule in alert_rules()}
    for test in ALERT_TESTS["tests"]:
        assert any(not case["exp_alerts"] for case in test["alert_rule_test"]), f"{test['name']}: no quiet case"
        assert any(case["exp_alerts"] for case in test["alert_rule_test"]), f"{test['name']}: no firing case"


def test_recording_rules_follow_level_metric_operations() -> None:
    rules = [rule for group in yaml.safe_load(RECORDING.read_text())["groups"] for rule in group["rules"]]
    assert rules
    for rule in rules:
        assert re.fullmatch(r"[a-z_]+:[a-z0-9_]+:[a-z0-9_]+", rule["record"]), rule["record"]


@pytest.mark.parametrize(
    "path", sorted((MONITORING / "grafana" / "provisioning").rglob("*.yml")), ids=lambda p: p.parent.name
)
def test_provisioning_files_are_grafana_apiversion_1(path: Path) -> None:
    assert yaml.safe_load(path.read_text())["apiVersion"] == 1


def test_no_default_credentials_anywhere() -> None:
    texts = [
        p.read_text()
        for root in (MONITORING, paths.ANSIBLE)
        for p in root.rglob("*")
        if p.is_file() and p.suffix in {".yml", ".j2", ".json", ".py"}
    ]
    for text in texts:
        assert not re.search(r"GF_SECURITY_ADMIN_PASSWORD:\s", text)
        assert "admin:admin" not in text
