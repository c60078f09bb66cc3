"""invoke export --to k8s: the recipe's engine as manifests a cluster accepts, or a clear refusal and no file."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest
import yaml

from station import paths
from station.errors import StationError
from station.fleet import k8s
from station.recipes import recipe, render

ENGINE_IMAGE = "registry.example/vllm:0.32.0@sha256:" + "e" * 64
ROUTER_IMAGE = "registry.example/vllm-router:0.1.17@sha256:" + "f" * 64


def placed(chosen: recipe.Recipe, **given) -> k8s.Placement:
    return k8s.placement(chosen, engine_image=ENGINE_IMAGE, router_image=ROUTER_IMAGE, **given)


def of_kind(rendered: list[dict], kind: str, name: str) -> dict:
    (found,) = [doc for doc in rendered if doc["kind"] == kind and doc["metadata"]["name"] == name]
    return found


def engine_container(rendered: list[dict]) -> dict:
    return of_kind(rendered, "Deployment", "station-vllm")["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("name", ["cpu-smoke", "nemotron-3.5-super-vl-gb300", "nemotron-3.5-super-vl-h100-h200"])
def test_the_written_manifests_validate_against_the_kubernetes_schemas(name: str, tmp_path) -> None:
    chosen = recipe.load(name)
    out = tmp_path / "station.yaml"
    k8s.export(chosen, placed(chosen, memory="64Gi", cpu="16"), out)
    written = list(yaml.safe_load_all(out.read_text()))
    assert {doc["kind"] for doc in written} >= {"Deployment", "Service", "NetworkPolicy", "Role", "ServiceMonitor"}
    for doc in written:
        if doc["kind"] != "ServiceMonitor":  # a CRD: checked against its Service below
            kubernetes_validate.validate(doc, k8s.KUBERNETES_VERSION, strict=True)
    assert k8s.problems(written, k8s.KUBERNETES_VERSION) == []


def test_the_engine_runs_the_recipes_argv_and_drains_on_stop(tmp_path) -> None:
    chosen = recipe.load("cpu-smoke")
    container = engine_container(k8s.manifests(chosen, placed(chosen)))
    assert container["args"][: len(render.serve_argv(chosen))] == render.serve_argv(chosen)
    assert container["args"][-2:] == ["--shutdown-timeout", "300"]
    assert {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": k8s.API_KEY_SECRET}} in container["env"]


def test_a_recipe_change_shows_up_in_the_rendered_args(tmp_path) -> None:
    data = yaml.safe_load((paths.RECIPES / "cpu-smoke.yml").read_text())
    data["engine"]["args"]["max-num-seqs"] = 64
    (tmp_path / "narrow.yml").write_text(yaml.safe_dump(data))
    narrow = recipe.load(str(tmp_path / "narrow.yml"))
    args = engine_container(k8s.manifests(narrow, placed(narrow)))["args"]
    assert args[args.index("--max-num-seqs") + 1] == "64"
    pod = of_kind(k8s.manifests(narrow, placed(narrow)), "Deployment", "station-vllm")["spec"]["template"]
    assert pod["metadata"]["annotations"]["station.io/config"] == render.config_hash(narrow)


@pytest.mark.parametrize(("name", "gpus"), [("cpu-smoke", None), ("nemotron-3.5-super-vl-h100-h200", 4)])
def test_each_engine_asks_for_one_gpu_per_parallel_rank(name: str, gpus: int | None) -> None:
    chosen = recipe.load(name)
    resources = engine_container(k8s.manifests(chosen, placed(chosen)))["resources"]
    assert resources.get("limits", {}).get("nvidia.com/gpu") == gpus


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"memory": "10GB"}, "'10GB' is not a Kubernetes quantity"),
        ({"cpu": "lots"}, "'lots' is not a Kubernetes quantity"),
        ({"replicas": 0}, "replicas: Input should be greater than or equal to 1"),
        ({"namespace": "Station_Prod"}, "namespace: String should match pattern"),
        ({"kubernetes": "1.99"}, "no schemas for Kubernetes 1.99"),
    ],
)
def test_an_invalid_placement_is_refused_and_nothing_is_written(given: dict, said: str, tmp_path) -> None:
    chosen = recipe.load("cpu-smoke")
    with pytest.raises(StationError, match="cannot render cpu-smoke") as refused:
        k8s.export(chosen, placed(chosen, **given), tmp_path / "station.yaml")
    assert said in refused.value.problem
    assert not (tmp_path / "station.yaml").exists()


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({}, "a cluster cannot pull the engine image of nemotron-3.5-super-vl-gb300-step5: station builds it"),
        ({"engine_image": ENGINE_IMAGE}, "cannot pull the router image"),
        ({"engine_image": "registry.example/vllm:0.32.0", "router_image": ROUTER_IMAGE}, "is not pinned"),
        ({"engine_image": "station.invalid/vllm:1@sha256:" + "e" * 64, "router_image": ROUTER_IMAGE}, "push it"),
    ],
)
def test_an_image_the_cluster_cannot_pull_is_refused(given: dict, said: str) -> None:
    with pytest.raises(StationError) as refused:
        k8s.placement(recipe.load("nemotron-3.5-super-vl-gb300"), **given)
    assert said in refused.value.problem


def router_args_of(chosen: recipe.Recipe) -> list[str]:
    rendered = k8s.manifests(chosen, placed(chosen))
    return of_kind(rendered, "Deployment", "station-router")["spec"]["template"]["spec"]["containers"][0]["args"]


def test_the_router_finds_the_engine_pods_by_their_labels_and_routes_as_the_recipe_says() -> None:
    chosen = recipe.load("cpu-smoke")
    args = router_args_of(chosen)
    pods = of_kind(k8s.manifests(chosen, placed(chosen)), "Deployment", "station-vllm")["spec"]["template"]
    assert "--policy=cache_aware" in args and "--service-discovery" in args
    assert set(args[args.index("--selector") + 1 : args.index("--selector") + 1 + len(pods["metadata"]["labels"])]) == {
        f"{key}={value}" for key, value in pods["metadata"]["labels"].items()
    }
    balanced = chosen.model_copy(update={"router": recipe.Router(policy="cache_aware", balance_abs_threshold=8)})
    assert "--balance-abs-threshold=8" in router_args_of(balanced)
    round_robin = chosen.model_copy(update={"router": recipe.Router(policy="round_robin")})
    assert "--policy=round_robin" in router_args_of(round_robin) and "--policy=cache_aware" not in router_args_of(
        round_robin
    )


def test_the_router_is_reached_through_its_gate_which_reads_the_key_from_the_secret() -> None:
    chosen = recipe.load("cpu-smoke")
    router = of_kind(k8s.manifests(chosen, placed(chosen)), "Deployment", "station-router")
    container = router["spec"]["template"]["spec"]["containers"][0]
    assert "--host=127.0.0.1" in container["args"] and "--port=8001" in container["args"]
    assert {"name": "http", "containerPort": 8000} in container["ports"]  # the gate, in front
    assert container["env"] == [{"name": "STATION_API_KEY", "valueFrom": {"secretKeyRef": k8s.API_KEY_SECRET}}]


def test_only_the_router_and_monitoring_reach_the_engines() -> None:
    chosen = recipe.load("cpu-smoke")
    policy = of_kind(k8s.manifests(chosen, placed(chosen)), "NetworkPolicy", "station-vllm")["spec"]
    (rule,) = policy["ingress"]
    assert rule["from"][0] == {"podSelector": {"matchLabels": k8s.labels(chosen, "router")}}
    assert rule["from"][1]["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "monitoring"}


def test_the_engine_asks_for_the_key_on_every_route_with_the_hosts_middleware() -> None:
    chosen = recipe.load("cpu-smoke")
    rendered = k8s.manifests(chosen, placed(chosen))
    shipped = paths.ANSIBLE / "roles" / "vllm_server" / "files" / "station_auth.py"
    assert of_kind(rendered, "ConfigMap", "station-engine-middleware")["data"] == {shipped.name: shipped.read_text()}
    assert render.KEY_MIDDLEWARE in engine_container(rendered)["args"]


def test_a_manifest_the_cluster_would_refuse_is_named() -> None:
    chosen = recipe.load("cpu-smoke")
    rendered = copy.deepcopy(k8s.manifests(chosen, placed(chosen)))
    of_kind(rendered, "Deployment", "station-vllm")["spec"]["replicas"] = "two"
    of_kind(rendered, "ServiceMonitor", "station-engine")["spec"]["endpoints"][0]["port"] = "web"
    of_kind(rendered, "ServiceMonitor", "station-router")["spec"]["selector"]["matchLabels"]["tier"] = "x"
    found = k8s.problems(rendered, k8s.KUBERNETES_VERSION)
    assert found == [
        "Deployment station-vllm: 'two' is not of type 'integer', 'null' at spec.replicas",
        "ServiceMonitor station-engine: scrapes port 'web', which its Service lacks",
        f"ServiceMonitor station-router: selects no Service (labels {k8s.labels(chosen, 'router') | {'tier': 'x'}})",
    ]
