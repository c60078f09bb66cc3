"""The Ansible content: lint, syntax, role interfaces, and station's event stream."""

from __future__ import annotations

import ast
import functools
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import time
import uuid
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import docker
import jinja2
import pytest
import yaml
from rich.console import Console

from station import paths
from station.deploy import playbook
from station.deploy.host_status import HostStatus
from station.errors import StationError
from tests.conftest import FIXTURES, ansible_module

ROLES = sorted(p.name for p in (paths.ANSIBLE / "roles").iterdir() if p.is_dir())


def _ansible(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd,
        cwd=paths.ANSIBLE,
        env=playbook.ansible_env() | {"ANSIBLE_STDOUT_CALLBACK": "default"},
        capture_output=True,
        text=True,
        check=False,
    )


def test_ansible_lint_production_profile_passes() -> None:
    """Its syntax-check rule, which no profile skips, runs `ansible-playbook --syntax-check` on every playbook and
    names the one that fails."""
    result = _ansible("ansible-lint", "--profile", "production", "--nocolor")
    assert result.returncode == 0, result.stdout + result.stderr


def _spec_options(role: str) -> dict[str, dict]:
    spec = yaml.safe_load((paths.ANSIBLE / "roles" / role / "meta" / "argument_specs.yml").read_text())
    return {name: option for entry in spec["argument_specs"].values() for name, option in entry["options"].items()}


@pytest.mark.parametrize("role", ROLES)
def test_argument_spec_and_defaults_agree(role: str) -> None:
    defaults = yaml.safe_load((paths.ANSIBLE / "roles" / role / "defaults" / "main.yml").read_text()) or {}
    options = _spec_options(role)
    assert set(defaults) <= set(options), f"defaults without a spec entry: {set(defaults) - set(options)}"
    for name, option in options.items():
        if option.get("required"):
            assert name not in defaults, f"{name} is required but has a default"
        else:
            assert name in defaults, f"{name} is documented but has no default"
            assert option.get("default") == defaults[name], f"{name}: spec default differs from defaults/main.yml"


@pytest.mark.parametrize("role", ROLES)
def test_every_role_option_is_described_and_typed(role: str) -> None:
    for name, option in _spec_options(role).items():
        assert option.get("description"), f"{name} has no description"
        assert option.get("type"), f"{name} has no type"


@pytest.mark.parametrize("role", ROLES)
def test_role_variables_carry_the_role_name(role: str) -> None:
    defaults = yaml.safe_load((paths.ANSIBLE / "roles" / role / "defaults" / "main.yml").read_text()) or {}
    assert all(name.startswith(f"{role}_") for name in defaults)


def test_requirements_match_the_installed_collections() -> None:
    listed = _ansible("ansible-galaxy", "collection", "list", "--format", "yaml").stdout
    installed = {name: info["version"] for found in yaml.safe_load(listed).values() for name, info in found.items()}
    required = yaml.safe_load((paths.ANSIBLE / "requirements.yml").read_text())["collections"]
    for collection in required:
        assert installed.get(collection["name"]) == collection["version"], collection["name"]


def test_event_stream_reports_changes_retries_and_the_failure(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(paths, "STATE", tmp_path / "state")
    console = Console(record=True, width=200)
    with pytest.raises(StationError) as error:
        playbook.run_file(FIXTURES / "playbooks" / "events.yml", "local", {}, console)
    shown = console.export_text()
    assert "changed Report a change" in shown
    assert "failed Fail with a message" in shown
    assert "events failed on local at “Fail with a message”" in error.value.problem
    assert "the fixture failed on purpose at bad" in error.value.problem  # the item's message, not the loop's
    log = next((tmp_path / "logs").glob("*-events-local.log")).read_text()
    assert log.count('"event": "retry"') == 2


def test_an_unreachable_host_is_one_clear_line(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(paths, "STATE", tmp_path / "state")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    gone:\n      ansible_host: 127.0.0.1\n      ansible_port: 1\n")
    monkeypatch.setenv("ANSIBLE_INVENTORY", str(inventory))
    with pytest.raises(StationError) as error:
        playbook.run_file(FIXTURES / "playbooks" / "events.yml", "gone", {}, Console(record=True))
    assert error.value.problem.startswith("gone is unreachable: ")
    assert "ansible/inventory/hosts.yml" in error.value.hint


def fake_toolkit_cli_standing_in_for_a_gpu_host(folder: Path, version: str) -> Path:
    """An `nvidia-ctk` that only reports a version, as the toolkit's CLI does (no GPU host here)."""
    cli = folder / "nvidia-ctk"
    cli.write_text(f"#!/bin/sh\necho 'NVIDIA Container Toolkit CLI version {version}'\necho 'commit: 0000000'\n")
    cli.chmod(0o755)
    return cli


@pytest.mark.parametrize(
    ("version", "refused"), [("1.17.3", True), ("1.19.0", True), ("1.19.1", False), ("1.20.1", False)]
)
def test_an_installed_container_toolkit_with_a_published_escape_is_refused(tmp_path, monkeypatch, version, refused):
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(paths, "STATE", tmp_path / "state")
    cli = fake_toolkit_cli_standing_in_for_a_gpu_host(tmp_path, version)
    run = functools.partial(
        playbook.run_file,
        FIXTURES / "playbooks" / "toolkit_preflight.yml",
        "local",
        {"_nvidia_container_toolkit_ctk": str(cli)},
        Console(record=True),
    )
    if not refused:
        run()
        return
    with pytest.raises(StationError) as error:
        run()
    assert f"The NVIDIA container toolkit on local is {version}, older than 1.19.1" in error.value.problem
    assert "CVE-2026-24260" in error.value.problem and "Nothing was changed on local" in error.value.problem


def test_a_host_without_a_container_toolkit_passes_its_preflight(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(paths, "STATE", tmp_path / "state")
    absent = {"_nvidia_container_toolkit_ctk": str(tmp_path / "nvidia-ctk")}
    playbook.run_file(FIXTURES / "playbooks" / "toolkit_preflight.yml", "local", absent, Console(record=True))


def engine_versions() -> dict[str, str]:
    """What this machine's Docker engine reports per component (Engine, runc, ...), read with the Docker SDK."""
    return {part["Name"]: part["Version"] for part in docker.from_env().version()["Components"]}


def release_line(version: str, patch: int) -> str:
    major, minor = version.split(".")[:2]
    return f"{major}.{minor}.{patch}"


@pytest.mark.parametrize(
    ("fixed_in", "reported"),
    [(lambda v: release_line(v, 999), True), (lambda v: release_line(v, 0), False), (lambda v: "0.1.0", False)],
    ids=["a later release of its line", "its line's first release", "an older line only"],
)
def test_a_docker_engine_older_than_a_security_fix_is_reported_with_how_to_upgrade(
    tmp_path, monkeypatch, fixed_in, reported
) -> None:
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(paths, "STATE", tmp_path / "state")
    engine = engine_versions()["Engine"]
    fix = {"name": "Docker Engine", "component": "Engine", "fixed": [fixed_in(engine)], "fixes": "CVE-0000-0001"}
    console = Console(record=True, width=400)
    playbook.run_file(FIXTURES / "playbooks" / "docker_versions.yml", "local",
                      {"_docker_engine_security_fixes": [fix]}, console)  # fmt: skip
    said = console.export_text()
    assert (f"Docker Engine {engine} on local predates the fix for CVE-0000-0001" in said) is reported, said
    if reported:
        assert f"first released in {fixed_in(engine)}" in said and "https://docs.docker.com/engine/install/" in said


@pytest.fixture
def empty_image() -> Iterator[str]:
    """An image of no layers, imported under a tag of its own (no registry here), and removed after."""
    client, tag = docker.from_env(), f"station.invalid/test-empty:{uuid.uuid4().hex[:8]}"
    archive = io.BytesIO()
    tarfile.open(fileobj=archive, mode="w").close()
    client.api.import_image_from_data(archive.getvalue(), repository=tag)
    yield tag
    for name in (tag, f"{tag}-late"):
        client.images.remove(name, force=True)


def test_an_image_is_found_by_what_the_run_knows_or_looked_up_and_a_missing_one_refused(
    tmp_path, monkeypatch, empty_image
) -> None:
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(paths, "STATE", tmp_path / "state")
    console = Console(record=True, width=400)
    late = f"{empty_image}-late"
    with pytest.raises(StationError) as error:
        playbook.run_file(FIXTURES / "playbooks" / "docker_images.yml", "local",
                          {"known_image": empty_image, "late_image": late}, console)  # fmt: skip
    said, image_id = console.export_text(), docker.from_env().images.get(empty_image).id
    assert f"known {image_id}" in said and f"late {image_id}" in said, said
    assert "runtimes " in said and "runc" in said.split("runtimes ")[1].split()[0]  # the later play's, not asked again
    assert f"Image {late}-nowhere is not on local and no registry provides it" in error.value.problem
    events = [json.loads(line) for line in next((tmp_path / "logs").glob("*.log")).read_text().splitlines()]
    looked_up = [e["task"] for e in events if e["event"] == "ok" and e["task"].startswith("station_docker : Look up")]
    assert looked_up == [f"station_docker : Look up on the host the image {name}" for name in (late, f"{late}-nowhere")]
    queried = [e for e in events if e["event"] == "ok" and e["task"].startswith("station_docker : Query the Docker")]
    assert len(queried) == 1


def test_the_shipped_fixes_name_components_this_engine_reports() -> None:
    fixes = yaml.safe_load((paths.ANSIBLE / "roles" / "docker_engine" / "vars" / "main.yml").read_text())
    assert {fix["component"] for fix in fixes["_docker_engine_security_fixes"]} <= set(engine_versions())


def _filters():
    return ansible_module("plugins/filter/station_filters.py")


def test_in_flight_counts_requests_running_and_waiting_only() -> None:
    metrics = (
        "# TYPE vllm:num_requests_running gauge\n"
        'vllm:num_requests_running{engine="0",model_name="tiny-llama"} 2.0\n'
        'vllm:num_requests_waiting{engine="0",model_name="tiny-llama"} 1.0\n'
        'vllm:num_requests_waiting_by_reason{engine="0",reason="capacity"} 7.0\n'
        'vllm:request_success_total{engine="0",finished_reason="length"} 40.0\n'
    )
    assert _filters().in_flight(metrics) == 3.0
    assert _filters().in_flight("") == 0


class EngineLike(BaseHTTPRequestHandler):
    """200 at /health, and at /readiness with the key k1 only (as the router's gate); 401 elsewhere. HTTP/1.0, as
    the health check asks."""

    def do_GET(self) -> None:
        keyed = self.headers.get("Authorization") == "Bearer k1"
        self.send_response(200 if self.path == "/health" or (self.path == "/readiness" and keyed) else 401)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def engine_like_port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), EngineLike)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def run_health_check(port: int, path: str, key_variable: str = "", key: str = "") -> int:
    test = _filters().health_check(port, path, key_variable)
    assert test[:5] == ["CMD", "python3", "-I", "-S", "-c"]  # no site-packages: the container's python3 as it is
    env = {key_variable: key} if key_variable else {}
    return subprocess.run([sys.executable, *test[2:]], env=env, capture_output=True, timeout=30).returncode


@pytest.mark.parametrize(
    ("path", "key_variable", "key", "healthy"),
    [
        ("/health", "", "", True),
        ("/readiness", "STATION_API_KEY", "k1", True),
        ("/readiness", "STATION_API_KEY", "k2", False),  # the gate refused the key
        ("/readiness", "", "", False),
        ("/elsewhere", "", "", False),
    ],
)
def test_a_health_check_is_healthy_on_a_200_only(engine_like_port, path, key_variable, key, healthy) -> None:
    assert (run_health_check(engine_like_port, path, key_variable, key) == 0) == healthy


def test_a_health_check_fails_where_nothing_listens() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    assert run_health_check(port, "/health") != 0


def test_a_fleets_engines_are_reached_on_their_private_address_and_the_fleets_port() -> None:
    hostvars = {
        "dgx02": {"vllm_server_fleet_address": "10.0.0.12", "station_fleet_engine_port": 8100},
        "dgx03": {"vllm_server_fleet_address": "10.0.0.13", "station_fleet_engine_port": 8300},
    }
    urls = _filters().fleet_engine_urls(["dgx02", "dgx03"], hostvars)
    assert urls == ["http://10.0.0.12:8100", "http://10.0.0.13:8300"]


def test_a_fleets_other_hosts_are_its_router_hosts_targets_on_their_private_address() -> None:
    hostvars = {
        "dgx02": {"vllm_server_fleet_address": "10.0.0.12"},
        "dgx03": {"vllm_server_fleet_address": "10.0.0.13"},
    }
    targets = _filters().fleet_scrape_targets(["dgx02", "dgx03"], hostvars, {"vllm": 8100, "node": 9100})
    assert targets == {
        "vllm": [{"targets": ["10.0.0.12:8100"], "host": "dgx02"}, {"targets": ["10.0.0.13:8100"], "host": "dgx03"}],
        "node": [{"targets": ["10.0.0.12:9100"], "host": "dgx02"}, {"targets": ["10.0.0.13:9100"], "host": "dgx03"}],
    }


@pytest.mark.parametrize(("bind", "local"), [("0.0.0.0", "127.0.0.1"), ("::", "127.0.0.1"), ("10.0.0.7", "10.0.0.7")])
def test_local_address_of_a_bind_address(bind: str, local: str) -> None:
    assert _filters().local_address(bind) == local


def test_an_argument_list_is_recorded_for_its_image_whatever_its_label() -> None:
    """A ladder's check names its steps differently from the deploys that run them: they share one record each."""
    argv = ["--model", "m", "--dtype", "float32"]
    checked = [{"label": "cpu-ladder step 4", "argv": argv}, {"label": "step 0", "argv": ["--model", "m"]}]
    deployed = [{"label": "cpu-ladder-step4", "argv": argv}]
    records = _filters().argcheck_records
    (step4, step0), (deploy,) = records(checked, "sha256:a", "parser"), records(deployed, "sha256:a", "parser")
    assert deploy == {"check": deployed[0], "record": step4["record"]} and step0["record"] != step4["record"]
    assert records(deployed, "sha256:b", "parser")[0]["record"] != deploy["record"]  # another image's vLLM
    assert records(deployed, "sha256:a", "parser 2")[0]["record"] != deploy["record"]  # another check


def test_container_summary_leaves_the_environment_out() -> None:
    found = {
        "item": "station-vllm",
        "container": {
            "State": {"Status": "running", "Health": {"Status": "healthy"}, "StartedAt": "t"},
            "Config": {
                "Image": "img:1",
                "Cmd": ["--model", "m", "--dtype", "bfloat16", "--shutdown-timeout", "300"],
                "Env": ["VLLM_API_KEY=secret"],
                "Labels": {"io.station.recipe": "r", "io.station.config": "c"},
            },
            "HostConfig": {"PortBindings": {"8000/tcp": [{"HostIp": "127.0.0.1", "HostPort": "8000"}]}},
        },
    }
    summary = _filters().container_summary(found)
    assert summary == {
        "name": "station-vllm",
        "status": "running",
        "health": "healthy",
        "image": "img:1",
        "recipe": "r",
        "config": "c",
        "dtype": "bfloat16",
        "ports": ["127.0.0.1:8000->8000/tcp"],
        "started_at": "t",
    }
    assert "secret" not in str(summary)


def test_what_the_engine_holds_is_reduced_to_published_ports_tagged_images_and_networks() -> None:
    """A docker_host_info result as the Docker API lists them: a stopped container publishes nothing, a port the image
    exposes without publishing is no host port, an untagged image has no name to be found by."""
    info = {
        "containers": [
            {
                "Names": ["/station-router"],
                "Ports": [
                    {"PrivatePort": 29000, "Type": "tcp"},
                    {"IP": "127.0.0.1", "PrivatePort": 8000, "PublicPort": 8000, "Type": "tcp"},
                    {"IP": "::1", "PrivatePort": 8000, "PublicPort": 8000, "Type": "tcp"},
                ],
            },
            {"Names": ["/station-vllm-candidate"], "Ports": []},
        ],
        "images": [{"Id": "sha256:a", "RepoTags": ["station.invalid/vllm-cpu:0.32.0", "x:1"]}, {"Id": "sha256:b"}],
        "networks": [{"Name": "bridge"}, {"Name": "station"}],
    }
    assert _filters().docker_known(info) == {
        "containers": {"station-router": ["8000"], "station-vllm-candidate": []},
        "images": {"station.invalid/vllm-cpu:0.32.0": "sha256:a", "x:1": "sha256:a"},
        "networks": ["bridge", "station"],
    }
    assert _filters().docker_known({"can_talk_to_docker": False}) == {"containers": {}, "images": {}, "networks": []}


@pytest.mark.parametrize(
    ("argv", "value"),
    [
        (["--model", "m", "--dtype", "float32"], "float32"),
        (["--dtype", "float32", "--dtype", "bfloat16"], "bfloat16"),  # argparse keeps the last
        (["--model", "m", "--dtype"], ""),
        (["--model", "m"], ""),
    ],
)
def test_the_value_of_a_flag_in_an_argument_list(argv: list[str], value: str) -> None:
    assert _filters().flag_value(argv, "--dtype") == value


def test_prometheus_labels_are_quoted_and_escaped() -> None:
    labels = _filters().prometheus_labels({"quantity": "prompt_tokens_mean", "profile": 'a"b\\c'})
    assert labels == '{quantity="prompt_tokens_mean",profile="a\\"b\\\\c"}'


def test_station_arguments_are_appended_to_every_checked_argument_list() -> None:
    checks = [{"label": "step 1", "argv": ["--model", "m"]}, {"label": "step 2", "argv": []}]
    extended = _filters().extend_argv(checks, ["--shutdown-timeout", 300])
    assert extended == [
        {"label": "step 1", "argv": ["--model", "m", "--shutdown-timeout", "300"]},
        {"label": "step 2", "argv": ["--shutdown-timeout", "300"]},
    ]
    assert checks[0]["argv"] == ["--model", "m"]  # the caller's lists are not changed


def test_absent_container_summary() -> None:
    assert _filters().container_summary({"item": "station-bench", "container": None})["status"] == "absent"


def test_what_the_status_playbook_writes_is_what_the_cli_reads() -> None:
    """status.json is the filters' output; HostStatus, the CLI's model of it, reads every field of it."""
    filters = _filters()
    running = {
        "item": "station-vllm",
        "container": {"State": {"Status": "running"}, "Config": {"Labels": {"io.station.config": "c1"}}},
    }
    targets = {"data": {"activeTargets": [{"labels": {"job": "vllm", "instance": "e:8000"}, "health": "up"}]}}
    written = {
        "host": "local",
        "containers": [filters.container_summary(running), filters.container_summary({"item": "station-bench"})],
        "targets": filters.target_summary(targets),
    }
    status = HostStatus.model_validate_json(json.dumps(written))
    assert status.model_dump() == written  # no field lost or renamed on the way
    assert status.container("station-vllm").running and status.container("station-vllm").config == "c1"
    assert not status.container("station-bench").running
    assert status.container("station-grafana") is None


def test_deploy_runs_pending_handlers_even_when_a_later_role_fails() -> None:
    plays = yaml.safe_load((paths.ANSIBLE / "playbooks" / "deploy.yml").read_text())
    (deploying,) = [play for play in plays if "roles" in play]
    assert deploying.get("force_handlers") is True


def tasks_in(node) -> list[dict]:
    """Every task dict under a parsed playbook or task file, blocks and plays included."""
    if isinstance(node, list):
        return [task for item in node for task in tasks_in(item)]
    if not isinstance(node, dict):
        return []
    nested = [node.get(key) for key in ("tasks", "pre_tasks", "post_tasks", "block", "rescue", "always")]
    return [node, *(task for child in nested if child for task in tasks_in(child))]


def looped_roles(loop: list[str] | str) -> list[str]:
    """The roles an include_role loops over: a list as written, or a templated one (station_roles) rendered as for a
    host outside any fleet, which runs every role."""
    if isinstance(loop, list):
        return loop
    group_vars = yaml.safe_load((paths.ANSIBLE / "inventory" / "group_vars" / "all.yml").read_text())
    render = jinja2.Environment().from_string
    station_roles = ast.literal_eval(render(group_vars["station_roles"]).render(station_fleet_member=False))
    return ast.literal_eval(render(loop).render(station_roles=station_roles))


def tasks_from_entries() -> list[tuple[str, str]]:
    """(role, entry point) for every include_role with tasks_from in the playbooks and roles."""
    found = set()
    for path in [*paths.ANSIBLE.glob("playbooks/*.yml"), *paths.ANSIBLE.glob("roles/*/tasks/*.yml")]:
        for task in tasks_in(yaml.safe_load(path.read_text())):
            include = task.get("ansible.builtin.include_role")
            if isinstance(include, dict) and "tasks_from" in include:
                roles = looped_roles(task["loop"]) if "{{" in include["name"] else [include["name"]]
                found |= {(role, include["tasks_from"]) for role in roles}
    return sorted(found)


@pytest.mark.parametrize(("role", "entry"), tasks_from_entries())
def test_every_tasks_from_entry_point_has_its_argument_spec(role: str, entry: str) -> None:
    specs = yaml.safe_load((paths.ANSIBLE / "roles" / role / "meta" / "argument_specs.yml").read_text())
    assert entry in specs["argument_specs"], f"{role}: tasks_from {entry} has no argument spec"


def test_a_renamed_engine_on_another_port_is_what_the_benchmark_and_prometheus_reach(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(paths, "STATE", tmp_path / "state")
    moved = {"vllm_server_container_name": "engine-x", "vllm_server_container_port": 8300, "wiring_out": str(tmp_path)}
    playbook.run_file(FIXTURES / "playbooks" / "wiring.yml", "local", moved, Console(record=True))
    assert json.loads((tmp_path / "bench.json").read_text()) == {"container": "engine-x", "url": "http://engine-x:8300"}
    jobs = {job["job_name"]: job for job in yaml.safe_load((tmp_path / "prometheus.yml").read_text())["scrape_configs"]}
    assert jobs["vllm"]["static_configs"][0]["targets"] == ["engine-x:8300"]
    assert jobs["vllm"]["authorization"]["credentials_file"]  # scraped with the engine's key
    assert len(jobs["vllm"]["static_configs"]) == 1  # a host outside any fleet scrapes its own engine only


def test_a_fleets_router_host_scrapes_each_other_host_of_the_fleet_by_name(tmp_path, monkeypatch) -> None:
    """The wiring rendered as on a fleet's router host whose fleet is sim2: its engine job has sim2's engine too, at
    sim2's private address on the fleet's port, labelled with its name, scraped with the same (the fleet's) key."""
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(paths, "STATE", tmp_path / "state")
    extra = {"station_fleet_hosts": ["sim2"], "wiring_out": str(tmp_path)}
    playbook.run_file(FIXTURES / "playbooks" / "wiring.yml", "local", extra, Console(record=True))
    jobs = {job["job_name"]: job for job in yaml.safe_load((tmp_path / "prometheus.yml").read_text())["scrape_configs"]}
    assert jobs["vllm"]["static_configs"][1] == {"targets": ["172.30.99.11:8100"], "labels": {"host": "sim2"}}
    assert jobs["vllm"]["authorization"]["credentials_file"]


def test_the_router_routes_with_the_arguments_the_recipe_renders(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(paths, "STATE", tmp_path / "state")
    routing = ["--policy=cache_aware", "--balance-abs-threshold=8"]
    extra = {"vllm_router_routing": routing, "wiring_out": str(tmp_path)}
    playbook.run_file(FIXTURES / "playbooks" / "wiring.yml", "local", extra, Console(record=True))
    command = json.loads((tmp_path / "router.json").read_text())
    assert [arg for arg in command if arg.startswith(("--policy", "--balance"))] == routing


def test_an_inventory_that_still_sets_the_routing_policy_is_told_the_recipe_gives_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(paths, "STATE", tmp_path / "state")
    with pytest.raises(StationError) as error:
        playbook.run_file(
            FIXTURES / "playbooks" / "router_preflight.yml", "local", {"vllm_router_policy": "round_robin"}, Console()
        )
    assert "sets vllm_router_policy (round_robin), which station no longer reads" in error.value.problem
    assert "router: {policy: round_robin}" in error.value.problem


@pytest.mark.parametrize(
    ("version", "fixed", "unfixed"),
    [
        ("20.10.24+dfsg1", ["28.3.3"], True),  # Debian's package: judged by its upstream number
        ("28.3.2", ["28.3.3"], True),
        ("28.3.3", ["28.3.3"], False),
        ("29.1.0", ["28.3.3"], False),  # a later line has the fix from its start
        ("1.1.5+ds1", ["1.2.8", "1.3.3"], True),  # a line older than any fixed one
        ("1.2.7", ["1.2.8", "1.3.3"], True),
        ("1.2.9", ["1.2.8", "1.3.3"], False),
        ("1.3.2-0ubuntu1~24.04.1", ["1.2.8", "1.3.3"], True),
        ("v1.3.3", ["1.2.8", "1.3.3"], False),
        ("1.3.5", ["1.2.8", "1.4.0"], True),  # an unlisted line between fixed ones: no fix is known
        ("unknown", ["1.2.8"], True),
    ],
)
def test_a_version_is_judged_by_the_fix_on_its_own_release_line(version: str, fixed: list[str], unfixed: bool) -> None:
    assert _filters().unfixed(version, fixed) is unfixed


def test_only_reported_components_that_predate_their_fix_are_findings() -> None:
    fixes = [{"name": "runc", "component": "runc", "fixed": ["1.2.8"], "fixes": "x"},
             {"name": "Docker Engine", "component": "Engine", "fixed": ["28.3.3"], "fixes": "y"},
             {"name": "crun", "component": "crun", "fixed": ["1.0.0"], "fixes": "z"}]  # fmt: skip
    found = _filters().security_findings({"Engine": "28.5.0", "runc": "1.1.5"}, fixes)
    assert found == [fixes[0] | {"version": "1.1.5"}]


@pytest.mark.parametrize(("strategy", "one_interpreter"), [(None, False), ("station_mitogen", True)])
def test_tasks_run_in_one_interpreter_per_host_with_mitogen_only(
    tmp_path, monkeypatch, strategy, one_interpreter
) -> None:
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(paths, "STATE", tmp_path / "state")
    monkeypatch.delenv(playbook.STRATEGY_ENV, raising=False)
    if strategy:
        monkeypatch.setenv(playbook.STRATEGY_ENV, strategy)
    try:
        playbook.run_file(FIXTURES / "playbooks" / "interpreter.yml", "local", {}, Console(record=True))
    except StationError as error:
        assert not one_interpreter, error.problem
        assert "two interpreters" in error.problem
    else:
        assert one_interpreter, "Ansible's own strategy started one interpreter per task"


def test_mitogen_waits_longer_for_a_local_host_than_its_default() -> None:
    """Mitogen's own deadline for a local connection is 30 s; station's strategy gives it 120 s."""
    read = "import station_mitogen, mitogen.parent; print(mitogen.parent.Options.connect_timeout)"
    env = playbook.ansible_env() | {"PYTHONPATH": str(paths.ANSIBLE / "plugins" / "strategy")}
    shown = subprocess.run([sys.executable, "-c", read], env=env, capture_output=True, text=True, check=True)
    assert float(shown.stdout) == 120


def test_modules_run_from_bytecode_in_payloads_built_once_per_controller_and_again_once_a_source_changes(
    tmp_path, monkeypatch
) -> None:
    """station_bytecode compiles each source once per controller; station_payloads keeps each payload for later runs,
    in a folder named by the sources payloads are built from."""
    monkeypatch.setattr(paths, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(paths, "STATE", tmp_path / "state")
    monkeypatch.setattr(paths, "CACHE", tmp_path / "state" / "cache")
    shutil.copytree(FIXTURES / "playbooks", tmp_path / "playbooks")
    module = tmp_path / "playbooks" / "library" / "station_imported_from.py"

    def run() -> dict[Path, int]:
        """Each compiled file and each payload, with when it was written."""
        playbook.run_file(tmp_path / "playbooks" / "bytecode.yml", "local", {}, Console(record=True))
        built = [*(paths.CACHE / "ansible-bytecode").rglob("*.pyc"), *(paths.CACHE / "ansible-payloads").glob("*/*")]
        return {path: path.stat().st_mtime_ns for path in built if not path.name.endswith(".lock")}

    first = run()
    assert len(first) > 10  # the module and each module_utils file it imports
    assert {path.parent.name for path in first if path.name.startswith("ansible.legacy.station_imported_from-")}
    assert run() == first  # read back, not compiled or built again
    module.write_text(module.read_text() + "\n# changed\n")
    rebuilt = [path for path in run().keys() - first.keys() if path.suffix != ".pyc"]
    assert {path.parent for path in rebuilt}.isdisjoint(path.parent for path in first)  # a folder of their own
    assert any(path.name.startswith("ansible.legacy.station_imported_from-") for path in rebuilt)


def test_payload_folders_no_run_used_for_a_month_are_removed(tmp_path, monkeypatch) -> None:
    plugin = ansible_module("plugins/callback/station_payloads.py")
    monkeypatch.setattr(plugin, "key", lambda: "current")
    cache, run_tmp = tmp_path / "payloads", tmp_path / "ansible-local-1"
    for name, days in (("stale", 31), ("recent", 29)):
        (cache / name).mkdir(parents=True)
        (cache / name / "ansible.modules.stat-ZIP_DEFLATED-none").write_bytes(b"payload")
        os.utime(cache / name, (time.time() - days * 86400,) * 2)
    run_tmp.mkdir()
    folder = plugin.keep_payloads(cache, run_tmp)
    assert sorted(path.name for path in cache.iterdir()) == ["current", "recent"]
    assert (run_tmp / "ansiballz_cache").resolve() == folder == cache / "current"


@pytest.mark.parametrize(
    ("bytecode_of", "runs"),
    [("the same source", "answer.pyc"), ("another source", "answer.py"), ("another Python", "answer.py")],
)
def test_a_hosts_python_runs_the_bytecode_sent_only_where_it_is_of_the_source_and_its_version(
    tmp_path, bytecode_of: str, runs: str
) -> None:
    """What a host's Python does with the bytecode station_bytecode sends: zipimport checks both."""
    plugin = ansible_module("plugins/callback/station_bytecode.py")
    source = b"ANSWER = 42\n"
    compiled = plugin.pyc("answer.py", b"ANSWER = 41\n" if bytecode_of == "another source" else source)
    if bytecode_of == "another Python":
        compiled = (3000).to_bytes(2, "little") + b"\r\n" + compiled[4:]
    payload = tmp_path / "payload.zip"
    with zipfile.ZipFile(payload, "w") as zf:
        zf.writestr("answer.py", source)
        zf.writestr("answer.pyc", compiled)
    read = "import os, answer; print(os.path.basename(answer.__file__), answer.ANSWER)"
    ran = subprocess.run([sys.executable, "-c", read], env={"PYTHONPATH": str(payload)}, capture_output=True, text=True)
    assert ran.stdout.split() == [runs, "42"], ran.stderr


def test_a_file_this_python_cannot_compile_is_sent_as_source_alone(tmp_path) -> None:
    """A module_utils file in syntax the controller's Python does not read (another version's) is left to the host."""
    plugin = ansible_module("plugins/callback/station_bytecode.py")
    with zipfile.ZipFile(tmp_path / "payload.zip", "w") as zf:
        payload = plugin._WithBytecode(zf, tmp_path / "cache")
        for name, source in (("legacy.py", b'print "hi"\n'), ("answer.py", b"ANSWER = 42\n")):
            payload.writestr(zipfile.ZipInfo(name), source)
        assert sorted(zf.namelist()) == ["answer.py", "answer.pyc", "legacy.py"]
