"""`invoke deploy --host local`: what runs, how it is exposed, and that a second deploy changes nothing."""

from __future__ import annotations

import json
import re
import stat
import urllib.parse

import openai
import pytest
import requests
from rich.console import Console

from station import paths
from station.deploy import inventory, playbook
from station.recipes import fit, render
from tests.conftest import host_section
from tests.integration.conftest import (
    API_URL,
    ENGINE,
    ENGINE_URL,
    NODE_EXPORTER,
    NODE_EXPORTER_URL,
    PROMETHEUS,
    PROMETHEUS_URL,
    ROUTER,
    Invocation,
    cpu_dtype,
    engine_argv,
    engine_target_up,
    extra_inventory,
    invoke,
    router_workers,
    succeeded,
    wait_for,
)

PUBLISHED = [(ROUTER, API_URL), (ENGINE, ENGINE_URL), (PROMETHEUS, PROMETHEUS_URL), (NODE_EXPORTER, NODE_EXPORTER_URL)]


def test_engine_runs_the_pinned_image_with_exactly_the_rendered_arguments(engine, smoke, docker_client) -> None:
    assert engine["Config"]["Image"] == smoke.engine.image
    assert engine["Image"] == docker_client.images.get(smoke.engine.image).id
    assert engine["Config"]["Cmd"] == engine_argv(smoke)
    assert engine["Config"]["Labels"]["io.station.config"] == render.config_hash(smoke)


def test_deploy_says_the_dtype_the_hosts_cpu_chose(first_deploy) -> None:
    assert f"The engine runs {cpu_dtype()} on local's CPU (" in first_deploy.output, first_deploy.output


def test_engine_process_inside_the_container_has_the_rendered_argv(engine_host, smoke) -> None:
    argv = engine_host.file("/proc/1/cmdline").content_string.rstrip("\0").split("\0")
    assert argv[-len(engine_argv(smoke)) - 1 :] == ["serve", *engine_argv(smoke)]


def test_the_engine_image_answers_vllms_model_inspection_from_its_cache(engine_host) -> None:
    """Built into the image (docker/vllm-cpu/Dockerfile): the engine's start skips the subprocess that would import
    all of vLLM again to inspect the model's architecture. A cache for other source is stale and would be ignored."""
    ask = (
        "import pathlib; from vllm.model_executor.models import llama, registry; "
        "m = registry.ModelRegistry.models['LlamaForCausalLM']; "
        "print(m._load_modelinfo_from_cache(m._get_modelinfo_module_hash(pathlib.Path(llama.__file__))))"
    )
    answer = engine_host.run(f'/opt/vllm/bin/python -c "{ask}"')
    assert answer.rc == 0 and "_ModelInfo(architecture='LlamaForCausalLM'" in answer.stdout, answer.stderr


def test_engine_environment_is_the_recipe_env_and_the_hosts_plus_the_key(engine, smoke) -> None:
    """The recipe's env, then the host's (vllm_server_live_env: the suite's, tests/fixtures/inventory/)."""
    env = dict(item.split("=", 1) for item in engine["Config"]["Env"])
    hosts = inventory.host_vars("local")["vllm_server_live_env"]
    expected = dict(smoke.engine.env) | hosts
    assert hosts and {name: env.get(name) for name in expected} == expected
    assert len(env["VLLM_API_KEY"]) == 48


def test_the_fit_predicts_the_kv_cache_the_engine_allocated(engine, smoke, docker_client) -> None:
    """`invoke fit`'s arithmetic (recipes/models/tiny-llama.yml, the engine's dtype) against vLLM's own figure: the
    KV cache the CPU engine logged at its start."""
    logged = re.findall(r"KV cache size: ([\d,]+) tokens", docker_client.containers.get(ENGINE).logs().decode())
    assert logged, "the engine logged no KV cache size"
    measured, predicted = int(logged[-1].replace(",", "")), fit.cpu_kv_tokens(smoke, cpu_dtype())
    print(f"\nKV cache: {predicted:,} tokens predicted, {measured:,} allocated by the engine ({cpu_dtype()})")
    assert abs(predicted - measured) <= 0.1 * measured


def test_the_engine_drains_when_stopped_and_the_router_holds_requests_meanwhile(engine, docker_client) -> None:
    """What a swap in place relies on: Docker waits out vLLM's drain; the router retries for vllm_router_hold_s."""
    assert engine["Config"]["StopTimeout"] == 300 + 30  # vllm_server_drain_timeout_s, plus room to exit
    router = docker_client.api.inspect_container(ROUTER)["Config"]["Cmd"]
    assert "--disable-circuit-breaker" in router and "--retry-max-backoff-ms=2000" in router
    assert "--retry-max-retries=453" in router  # 900 s of 2 s backoffs, and the three shorter first ones


def test_the_wait_for_the_router_to_serve_again_ends_at_once_where_it_does_not_answer(first_deploy) -> None:
    """A router that does not answer at all (a crash loop) holds no request: the engine role's wait after a swap in
    place notes it and goes on (the router's own step replaces it), where it used to wait out vllm_router_hold_s."""
    waits = paths.ROOT / "tests" / "fixtures" / "playbooks" / "router_serving.yml"
    answering, silent = Console(record=True, width=400), Console(record=True, width=400)
    playbook.run_file(waits, "local", {}, answering)
    playbook.run_file(waits, "local", {"_vllm_router_url": "http://127.0.0.1:1"}, silent)  # nothing listens there
    assert "does not answer" not in answering.export_text()
    said = silent.export_text()
    assert "The router on local does not answer" in said and "replaces the router next" in said, said


def test_engine_has_the_recipes_shared_memory(engine) -> None:
    assert engine["HostConfig"]["ShmSize"] == 2 * 1024**3


@pytest.mark.parametrize(("container", "url"), PUBLISHED)
def test_port_is_published_on_loopback_only(docker_client, local_host, container: str, url: str) -> None:
    port = urllib.parse.urlsplit(url).port
    bindings = docker_client.api.inspect_container(container)["HostConfig"]["PortBindings"]
    assert [b["HostIp"] for binds in bindings.values() for b in binds] == ["127.0.0.1"]
    assert local_host.socket(f"tcp://127.0.0.1:{port}").is_listening
    assert not local_host.socket(f"tcp://0.0.0.0:{port}").is_listening
    assert not local_host.socket(f"tcp://:::{port}").is_listening


@pytest.mark.parametrize("container", [ROUTER, ENGINE, PROMETHEUS, NODE_EXPORTER])
def test_restart_policy_keeps_services_up(docker_client, first_deploy, container: str) -> None:
    policy = docker_client.api.inspect_container(container)["HostConfig"]["RestartPolicy"]
    assert policy["Name"] == "unless-stopped"


@pytest.mark.parametrize("url", [API_URL, ENGINE_URL], ids=["router", "engine"])
@pytest.mark.parametrize("authorization", [None, "Bearer wrong-key"])
def test_api_rejects_requests_without_the_key(first_deploy, url, authorization) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    assert requests.get(f"{url}/v1/models", headers=headers, timeout=10).status_code == 401


OPEN_ROUTES = {("GET", "/health")}  # a bare health check, for probes that carry no key
DOCUMENTS = [("GET", "/openapi.json"), ("GET", "/docs"), ("GET", "/redoc")]


@pytest.fixture(scope="module")
def engine_routes(api_key) -> list[tuple[str, str]]:
    """Every (method, path) the pinned vLLM's own app serves, from its OpenAPI document (read with the key)."""
    spec = requests.get(f"{ENGINE_URL}/openapi.json", headers={"Authorization": f"Bearer {api_key}"}, timeout=10)
    spec.raise_for_status()
    served = [(method.upper(), path) for path, methods in spec.json()["paths"].items() for method in methods]
    return sorted(served) + DOCUMENTS


def without_key(base_url: str, method: str, path: str) -> int:
    url = base_url + path.replace("{", "").replace("}", "")
    return requests.request(method, url, json={} if method in {"POST", "PUT"} else None, timeout=30).status_code


def test_every_route_the_engine_serves_asks_for_the_key(engine_routes) -> None:
    answers = {route: without_key(ENGINE_URL, *route) for route in engine_routes}
    print("\n".join(f"{method:6} {path:40} without key: {code}" for (method, path), code in answers.items()))
    assert len(answers) > 15, "the OpenAPI document lists fewer routes than vLLM serves"
    assert {route for route, code in answers.items() if code != 401} == OPEN_ROUTES


def test_no_route_the_engine_serves_answers_through_the_router_without_the_key(engine_routes) -> None:
    """The router forwards the caller's key (or none) and the engine checks it; a route the router does not
    forward answers 404 or 405. vllm-router's own /health answers anyone, as the engine's does."""
    answers = {route: without_key(API_URL, *route) for route in engine_routes}
    print("\n".join(f"{method:6} {path:40} through the router: {code}" for (method, path), code in answers.items()))
    assert {route for route, code in answers.items() if code < 400} == OPEN_ROUTES


def test_the_router_routes_to_the_engine_only(first_deploy) -> None:
    assert router_workers() == [f"http://{ENGINE}:8000"]


# vllm-router's own routes (src/server.rs of vllm-project/router), which take no key of their own, and one it does
# not know (it forwards those as they are)
ROUTER_ROUTES = [
    ("GET", "/liveness"), ("GET", "/readiness"), ("GET", "/health_generate"), ("GET", "/get_server_info"),
    ("GET", "/get_model_info"), ("GET", "/v1/models"), ("POST", "/generate"), ("POST", "/v1/chat/completions"),
    ("POST", "/add_worker?url=http://attacker.invalid:8000"), ("GET", "/list_workers"),
    ("POST", f"/remove_worker?url=http://{ENGINE}:8000"), ("POST", "/flush_cache"), ("GET", "/get_loads"),
    ("GET", "/workers"), ("POST", "/workers"), ("GET", "/no/such/route"),
]  # fmt: skip


def test_the_routers_own_routes_ask_for_the_key_and_nobody_without_it_moves_an_engine(first_deploy) -> None:
    answers = {route: without_key(API_URL, *route) for route in ROUTER_ROUTES}
    print("\n".join(f"{method:6} {path:50} without key: {code}" for (method, path), code in answers.items()))
    assert {route: code for route, code in answers.items() if code != 401} == {}
    assert router_workers() == [f"http://{ENGINE}:8000"]  # the add and the remove above were refused
    assert requests.get(f"{API_URL}/health", timeout=10).status_code == 200  # health checks need no key


# Connects to the container's own address on station's network, as another container there would
CONNECT = (
    "import socket, sys; address = socket.gethostbyname(socket.gethostname()); "
    "print(socket.socket().connect_ex((address, int(sys.argv[1]))))"
)


@pytest.mark.parametrize(("port", "reached"), [(8000, True), (8001, False)], ids=["the gate", "vllm-router"])
def test_on_stations_network_the_router_is_reached_through_its_gate_only(docker_client, port, reached) -> None:
    said = docker_client.containers.get(ROUTER).exec_run(["python3", "-c", CONNECT, str(port)]).output.decode()
    assert (said.strip() == "0") is reached, said


def test_a_streamed_chat_through_the_router_reaches_the_engine(api_key, smoke) -> None:
    def finished() -> float:
        counted = requests.get(f"{ENGINE_URL}/metrics", headers={"Authorization": f"Bearer {api_key}"}, timeout=10)
        lines = [line for line in counted.text.splitlines() if line.startswith("vllm:request_success_total")]
        return sum(float(line.split()[-1]) for line in lines)

    before = finished()
    client = openai.OpenAI(base_url=f"{API_URL}/v1", api_key=api_key, max_retries=0)
    stream = client.chat.completions.create(
        model=smoke.model.served_name, messages=[{"role": "user", "content": "hi"}], max_tokens=8, stream=True
    )
    chunks = list(stream)
    assert chunks[-1].choices[0].finish_reason == "length"
    assert finished() == before + 1


def test_the_health_check_answers_without_the_key(first_deploy) -> None:
    assert requests.get(f"{ENGINE_URL}/health", timeout=10).status_code == 200


@pytest.mark.parametrize("url", [API_URL, ENGINE_URL], ids=["router", "engine"])
def test_no_cross_origin_requests_are_allowed(api_key, url) -> None:
    preflight = requests.options(
        f"{url}/v1/models",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"},
        timeout=10,
    )
    assert "access-control-allow-origin" not in preflight.headers
    headers = {"Origin": "https://evil.example", "Authorization": f"Bearer {api_key}"}
    answer = requests.get(f"{url}/v1/models", headers=headers, timeout=10)
    assert answer.status_code == 200 and "access-control-allow-origin" not in answer.headers


def test_api_serves_the_model_with_the_key(api_key, smoke) -> None:
    headers = {"Authorization": f"Bearer {api_key}"}
    models = requests.get(f"{API_URL}/v1/models", headers=headers, timeout=10).json()
    assert [model["id"] for model in models["data"]] == [smoke.model.served_name]
    body = {"model": smoke.model.served_name, "prompt": "hello", "max_tokens": 4, "ignore_eos": True}
    completion = requests.post(f"{API_URL}/v1/completions", json=body, headers=headers, timeout=60).json()
    assert completion["usage"]["completion_tokens"] == 4


def test_api_key_is_private_and_never_written_elsewhere(api_key) -> None:
    key_file = paths.SECRETS / "local" / "vllm_api_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(paths.SECRETS.stat().st_mode) == 0o700
    folders = (paths.LOGS, paths.STATE / "run", paths.RESULTS)
    written = [p for folder in folders for p in folder.rglob("*") if p.is_file()]
    assert written, "expected logs and rendered vars to check"
    assert [p for p in written if api_key in p.read_text(errors="replace")] == []


def test_prometheus_scrapes_the_engine(first_deploy) -> None:
    wait_for(engine_target_up, 60, "the vllm target to be up")


def test_prometheus_runs_the_pinned_locally_built_image(docker_client, first_deploy) -> None:
    assert docker_client.api.inspect_container(PROMETHEUS)["Config"]["Image"] == "station.invalid/prometheus:2.42.0"


def test_prometheus_keeps_samples_bounded_by_time_and_by_size(docker_client, first_deploy) -> None:
    command = docker_client.api.inspect_container(PROMETHEUS)["Config"]["Cmd"]
    assert "--storage.tsdb.retention.time=15d" in command and "--storage.tsdb.retention.size=10GB" in command


def test_status_shows_the_containers_and_the_scrape_target(first_deploy) -> None:
    wait_for(engine_target_up, 60, "the vllm target to be up")
    shown = succeeded(invoke("status", "--host", "local")).output
    engine_row = [line for line in shown.splitlines() if ENGINE in line and "running" in line and "healthy" in line]
    assert engine_row and "cpu-smoke" in engine_row[0] and f" {cpu_dtype()} " in engine_row[0], shown
    assert any("scrape: vllm" in line and "up" in line for line in shown.splitlines())


def test_status_of_a_group_shows_each_host_and_names_the_one_that_cannot_answer(first_deploy, tmp_path) -> None:
    fleet = {"local": {}, "gone": {"ansible_host": "127.0.0.1", "ansible_port": 1}}
    run = invoke("status", "--host", "fleet", env=extra_inventory(tmp_path, fleet, group="fleet"))
    assert run.returncode == 1, run.output
    assert "station on local" in run.output and any(
        ENGINE in line and "running" in line for line in run.output.splitlines()
    )
    assert "error: status failed on gone:\ngone is unreachable: " in run.output


@pytest.fixture(scope="module")
def second_deploy(first_deploy, tmp_path_factory) -> Invocation:
    """A second deploy of local, in a group with a host it cannot reach: the hosts deploy at once, local deployed
    already, the other failing the command."""
    fleet = {"local": {}, "gone": {"ansible_host": "127.0.0.1", "ansible_port": 1}}
    env = extra_inventory(tmp_path_factory.mktemp("group"), fleet, group="fleet")
    run = invoke("deploy", "--host", "fleet", "--no-agent-check", env=env)
    print(f"\nthe deploy of local and gone failed on gone after {run.seconds:.0f} s")
    return run


def test_second_deploy_changes_nothing(second_deploy) -> None:
    local = host_section(second_deploy.output, "deploy", "local")
    assert "Deployed cpu-smoke on local" in local and "Ansible changed=0" in local, second_deploy.output
    assert "changed " not in local.split("Deployed")[0]
    assert "DeprecationWarning" not in second_deploy.output  # cryptography's DSA one was printed by every run
    (log,) = sorted(paths.LOGS.glob("*-deploy-local.log"))[-1:]
    parsed = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    parser = "vllm_server : Parse the engine arguments with the image's own vLLM"
    assert [e["event"] for e in parsed if e.get("task") == parser] == ["skipped"]  # this image accepted them before


def test_deploy_of_a_group_deploys_each_host_it_reaches_and_names_the_one_it_cannot(second_deploy) -> None:
    assert second_deploy.returncode == 1, second_deploy.output
    assert "gone is unreachable" in host_section(second_deploy.output, "deploy", "gone")
    assert "error: deploy failed on gone:\ngone is unreachable: " in second_deploy.output


def test_status_looks_up_the_containers_the_roles_name(first_deploy, tmp_path) -> None:
    """Each role reports its own containers: an engine renamed in the inventory is the one status looks for."""
    env = extra_inventory(tmp_path, {"local": {"vllm_server_container_name": "station-engine-renamed"}})
    shown = succeeded(invoke("status", "--host", "local", env=env)).output.splitlines()
    assert any("station-engine-renamed " in line and "absent" in line for line in shown), shown
    assert any("station-engine-renamed-candidate" in line for line in shown), shown
    assert not any(f"{ENGINE} " in line for line in shown), shown
    assert any(ROUTER in line and "running" in line for line in shown), shown
