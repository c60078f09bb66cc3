"""A recipe as plain Kubernetes manifests, for a cluster that already schedules GPUs (invoke export --to k8s).

The engines are the recipe's `vllm serve`, argv for argv (station.recipes.render), with the same key on every
route (station's middleware, from a ConfigMap) and the same drain on stop. vLLM's router finds them by label
(its Kubernetes pod discovery), with the recipe's routing and the health interval station's router role uses on a
host.
Prometheus Operator scrapes both through ServiceMonitors; a NetworkPolicy lets only the router and the
monitoring namespace reach the engines. Secrets are referenced, never rendered: the cluster holds them.

Validated offline: every built-in kind against the Kubernetes schemas (kubernetes-validate, strict), and each
ServiceMonitor against the Service it must select (its CRD is not in those schemas). Nothing here was applied
to a cluster by station's tests.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any

import kubernetes_validate
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from station import paths
from station.deploy import inventory
from station.errors import StationError
from station.recipes import render
from station.recipes.recipe import DIGEST, LOCAL_IMAGES, Recipe, format_errors

# The Kubernetes quantity grammar (apimachinery's resource.Quantity), which the JSON schemas leave unchecked.
QUANTITY = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
# Supported upstream on 2026-12-01 (kubernetes.io/releases): 1.35, 1.36, 1.37; the oldest is the default.
KUBERNETES_VERSION = "1.35"

API_KEY_SECRET = {"name": "station-api-key", "key": "api-key"}
HF_TOKEN_SECRET = {"name": "station-hf-token", "key": "token"}
MIDDLEWARE_MOUNT = "/opt/station/engine"
HF_TOKEN_MOUNT = "/run/secrets/hf_token"
ROUTER_METRICS_PORT = 29000
# vllm-router allows every origin when given none: one that can never match (.invalid, RFC 2606), as on a host.
NO_ORIGIN = "https://no-cross-origin-requests.invalid"
DOCKER_SIZE_UNITS = {"b": "", "k": "Ki", "m": "Mi", "g": "Gi"}  # Docker's shm sizes are binary

Image = Annotated[str, Field(description="Image reference a cluster can pull, pinned by digest")]


class Placement(BaseModel):
    """Where and how big: what a cluster needs that a recipe does not say."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    namespace: str = Field("station", pattern=DNS_LABEL)
    engine_image: Image
    router_image: Image
    replicas: Annotated[int, Field(ge=1)] = 1
    cpu: str | None = Field(None, description="CPU each engine requests, e.g. 16 or 500m")
    memory: str | None = Field(None, description="Memory each engine requests, e.g. 64Gi")
    model_cache_claim: str | None = Field(None, pattern=DNS_LABEL, description="PersistentVolumeClaim for weights")
    monitoring_namespace: str = Field("monitoring", pattern=DNS_LABEL)
    kubernetes: str = Field(KUBERNETES_VERSION, pattern=r"^1\.[0-9]+$")

    @field_validator("engine_image", "router_image")
    @classmethod
    def _pullable_and_pinned(cls, image: str) -> str:
        if image.startswith(LOCAL_IMAGES):
            raise ValueError(
                f"{image!r} exists only where station built it: push it to a registry your cluster pulls from "
                "(docker tag, docker push) and pass that reference, pinned by digest"
            )
        if not DIGEST.search(image):
            raise ValueError(f"{image!r} is not pinned: give it by digest (name:tag@sha256:...)")
        return image

    @field_validator("cpu", "memory")
    @classmethod
    def _quantity(cls, value: str | None) -> str | None:
        if value is not None and not re.match(QUANTITY, value):
            raise ValueError(f"{value!r} is not a Kubernetes quantity: write e.g. 64Gi, 512Mi, 16 or 500m")
        return value

    @field_validator("kubernetes")
    @classmethod
    def _schemas_exist(cls, version: str) -> str:
        known = sorted({kubernetes_validate.utils.major_minor(v) for v in kubernetes_validate.utils.all_versions()})
        if version not in known:
            raise ValueError(f"kubernetes-validate has no schemas for Kubernetes {version}; it has {', '.join(known)}")
        return version


def placement(recipe: Recipe, **given: Any) -> Placement:
    """The placement from the command line; the recipe's own image when a cluster can pull it."""
    chosen = {name: value for name, value in given.items() if value not in (None, "")}
    if not recipe.engine.image.startswith(LOCAL_IMAGES):
        chosen.setdefault("engine_image", recipe.engine.image)
    for field, option in (("engine_image", "--image"), ("router_image", "--router-image")):
        if field not in chosen:
            raise StationError(
                f"a cluster cannot pull the {field.split('_')[0]} image of {recipe.name}: station builds it",
                f"push station's build to a registry your cluster pulls from and pass {option} NAME:TAG@sha256:DIGEST",
            )
    try:
        return Placement(**chosen)
    except ValidationError as exc:
        raise StationError(
            f"cannot render {recipe.name} for Kubernetes:\n{format_errors(exc)}",
            "fix the option named above; nothing was written",
        ) from exc


def labels(recipe: Recipe, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "station",
        "app.kubernetes.io/instance": recipe.name[:63],  # a label value: at most 63 characters
        "app.kubernetes.io/component": component,
    }


def manifests(recipe: Recipe, where: Placement) -> list[dict[str, Any]]:
    """Every object the cluster needs, in the order `kubectl apply -f` creates them."""
    return [
        middleware_config(recipe, where),
        *engine(recipe, where),
        engines_reachable_by_router_only(recipe, where),
        *router(recipe, where),
        service_monitor(recipe, where, "engine", "http", authorised=True),
        service_monitor(recipe, where, "router", "metrics", authorised=False),
    ]


def meta(recipe: Recipe, where: Placement, name: str, component: str) -> dict[str, Any]:
    return {"name": name, "namespace": where.namespace, "labels": labels(recipe, component)}


def middleware_config(recipe: Recipe, where: Placement) -> dict[str, Any]:
    """station's key-on-every-route middleware, the file a host mounts, as a ConfigMap."""
    source = paths.ANSIBLE / "roles" / "vllm_server" / "files" / "station_auth.py"
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(recipe, where, "station-engine-middleware", "engine"),
        "data": {source.name: source.read_text()},
    }


def engine(recipe: Recipe, where: Placement) -> list[dict[str, Any]]:
    drain_s = inventory.role_default("vllm_server", "vllm_server_drain_timeout_s")
    selector = labels(recipe, "engine")
    pod = {
        "terminationGracePeriodSeconds": drain_s + 30,
        "hostIPC": recipe.engine.container.ipc_host,
        "containers": [engine_container(recipe, where, drain_s)],
        "volumes": engine_volumes(recipe, where),
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(recipe, where, "station-vllm", "engine"),
        "spec": {
            "replicas": where.replicas,
            "selector": {"matchLabels": selector},
            # A new configuration proves itself (startup and readiness) before an old engine stops.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            "template": {
                "metadata": {
                    "labels": selector,
                    "annotations": {"station.io/recipe": recipe.name, "station.io/config": render.config_hash(recipe)},
                },
                "spec": pod,
            },
        },
    }
    return [deployment, service(recipe, where, "station-vllm", "engine", {"http": render.ENGINE_CONTAINER_PORT})]


def engine_container(recipe: Recipe, where: Placement, drain_s: int) -> dict[str, Any]:
    env = [{"name": name, "value": value} for name, value in recipe.engine.env.items()]
    env += [
        {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": API_KEY_SECRET}},
        {"name": "PYTHONPATH", "value": MIDDLEWARE_MOUNT},
    ]
    if recipe.model.source == "hub":
        env.append({"name": "HF_TOKEN_PATH", "value": HF_TOKEN_MOUNT})
    health, health_timeout_s = {"httpGet": {"path": "/health", "port": "http"}}, recipe.engine.health_timeout_s
    return {
        "name": "vllm",
        "image": where.engine_image,
        "command": ["vllm", "serve"],
        "args": [*render.serve_argv(recipe), "--shutdown-timeout", str(drain_s)],
        "env": env,
        "ports": [{"name": "http", "containerPort": render.ENGINE_CONTAINER_PORT}],
        "resources": engine_resources(recipe, where),
        "startupProbe": health | {"periodSeconds": 10, "failureThreshold": math.ceil(health_timeout_s / 10)},
        "readinessProbe": health | {"periodSeconds": 5},
        "livenessProbe": health | {"periodSeconds": 10, "failureThreshold": 3},
        "volumeMounts": engine_mounts(recipe),
    }


def gpus_per_engine(recipe: Recipe) -> int:
    """One GPU per tensor- and pipeline-parallel rank; none for a CPU recipe."""
    if not recipe.engine.container.gpus:
        return 0
    args = recipe.engine.args
    return int(args.get("tensor-parallel-size", 1)) * int(args.get("pipeline-parallel-size", 1))


def engine_resources(recipe: Recipe, where: Placement) -> dict[str, Any]:
    requests = {name: value for name, value in (("cpu", where.cpu), ("memory", where.memory)) if value}
    resources: dict[str, Any] = {"requests": requests} if requests else {}
    if gpus := gpus_per_engine(recipe):
        resources["limits"] = {"nvidia.com/gpu": gpus}
    return resources


def engine_mounts(recipe: Recipe) -> list[dict[str, Any]]:
    mounts = [
        {"name": "middleware", "mountPath": MIDDLEWARE_MOUNT, "readOnly": True},
        {"name": "shm", "mountPath": "/dev/shm"},
        {"name": "models", "mountPath": "/root/.cache/huggingface"},
    ]
    if recipe.model.source == "hub":
        mounts.append({"name": "hf-token", "mountPath": HF_TOKEN_MOUNT, "subPath": "token", "readOnly": True})
    return mounts


def engine_volumes(recipe: Recipe, where: Placement) -> list[dict[str, Any]]:
    shm = recipe.engine.container.shm_size
    claim = where.model_cache_claim
    models = {"persistentVolumeClaim": {"claimName": claim}} if claim else {"emptyDir": {}}
    volumes = [
        {"name": "middleware", "configMap": {"name": "station-engine-middleware"}},
        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": shm[:-1] + DOCKER_SIZE_UNITS[shm[-1]]}},
        {"name": "models", **models},
    ]
    if recipe.model.source == "hub":
        token = {"secretName": HF_TOKEN_SECRET["name"], "optional": True, "defaultMode": 0o400}
        volumes.append({"name": "hf-token", "secret": token})
    return volumes


def service(recipe: Recipe, where: Placement, name: str, component: str, ports: dict[str, int]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(recipe, where, name, component),
        "spec": {
            "selector": labels(recipe, component),
            "ports": [{"name": port, "port": number, "targetPort": port} for port, number in ports.items()],
        },
    }


def engines_reachable_by_router_only(recipe: Recipe, where: Placement) -> dict[str, Any]:
    """Engine pods take connections from the router and from Prometheus' namespace, no one else."""
    monitoring = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": where.monitoring_namespace}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": meta(recipe, where, "station-vllm", "engine"),
        "spec": {
            "podSelector": {"matchLabels": labels(recipe, "engine")},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": labels(recipe, "router")}}, monitoring]}],
        },
    }


def router(recipe: Recipe, where: Placement) -> list[dict[str, Any]]:
    """vLLM's router, discovering the engine pods by label; it may read pods in its namespace, nothing more."""
    name, selector = "station-router", labels(recipe, "router")
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(recipe, where, name, "router")}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": meta(recipe, where, name, "router"),
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": meta(recipe, where, name, "router"),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": where.namespace}],
    }
    container = {
        "name": "router",
        "image": where.router_image,
        "args": router_args(recipe, where),
        # station's router image asks for the key on every route but /health (docker/vllm-router/gate.conf)
        "env": [{"name": "STATION_API_KEY", "valueFrom": {"secretKeyRef": API_KEY_SECRET}}],
        "ports": [
            {"name": "http", "containerPort": render.ENGINE_CONTAINER_PORT},
            {"name": "metrics", "containerPort": ROUTER_METRICS_PORT},
        ],
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 5},
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(recipe, where, name, "router"),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": selector},
                "spec": {"serviceAccountName": name, "containers": [container]},
            },
        },
    }
    ports = {"http": render.ENGINE_CONTAINER_PORT, "metrics": ROUTER_METRICS_PORT}
    return [account, role, binding, deployment, service(recipe, where, name, "router", ports)]


def router_args(recipe: Recipe, where: Placement) -> list[str]:
    engines = [f"{key}={value}" for key, value in labels(recipe, "engine").items()]
    origins = render.allowed_origins(recipe) or [NO_ORIGIN]
    interval = inventory.role_default("vllm_router", "vllm_router_health_check_interval_s")
    behind_gate = inventory.role_var("vllm_router", "_vllm_router_behind_gate_port")  # the gate holds the API port
    return [
        "--host=127.0.0.1",
        f"--port={behind_gate}",
        *render.routing_args(recipe),
        "--service-discovery",
        "--selector",
        *engines,
        f"--service-discovery-port={render.ENGINE_CONTAINER_PORT}",
        f"--service-discovery-namespace={where.namespace}",
        f"--health-check-interval-secs={interval}",
        "--prometheus-host=0.0.0.0",
        f"--prometheus-port={ROUTER_METRICS_PORT}",
        "--cors-allowed-origins",
        *origins,
    ]


def service_monitor(recipe: Recipe, where: Placement, component: str, port: str, authorised: bool) -> dict[str, Any]:
    endpoint: dict[str, Any] = {"port": port, "path": "/metrics", "interval": "5s"}
    if authorised:
        endpoint["authorization"] = {"type": "Bearer", "credentials": API_KEY_SECRET}
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": meta(recipe, where, f"station-{component}", component),
        "spec": {"selector": {"matchLabels": labels(recipe, component)}, "endpoints": [endpoint]},
    }


def problems(rendered: list[dict[str, Any]], kubernetes: str) -> list[str]:
    """What the cluster would refuse: schema errors of built-in kinds, ServiceMonitors that select nothing."""
    found = []
    services = [doc for doc in rendered if doc["kind"] == "Service"]
    for doc in rendered:
        where = f"{doc['kind']} {doc['metadata']['name']}"
        if doc["kind"] == "ServiceMonitor":
            found += [f"{where}: {problem}" for problem in monitor_problems(doc, services)]
            continue
        try:
            kubernetes_validate.validate(doc, kubernetes, strict=True)
        except kubernetes_validate.ValidationError as exc:
            found.append(f"{where}: {exc.message} at {'.'.join(map(str, exc.path))}")
    return found


def monitor_problems(monitor: dict[str, Any], services: list[dict[str, Any]]) -> list[str]:
    wanted = monitor["spec"]["selector"]["matchLabels"]
    selected = [s for s in services if wanted.items() <= s["metadata"]["labels"].items()]
    if not selected:
        return [f"selects no Service (labels {wanted})"]
    ports = {port["name"] for s in selected for port in s["spec"]["ports"]}
    missing = [e["port"] for e in monitor["spec"]["endpoints"] if e["port"] not in ports]
    return [f"scrapes port {port!r}, which its Service lacks" for port in missing]


def export(recipe: Recipe, where: Placement, out: Path) -> list[dict[str, Any]]:
    """Render, validate, then write; nothing is written when the cluster would refuse any of it."""
    rendered = manifests(recipe, where)
    if found := problems(rendered, where.kubernetes):
        listed = "\n".join(found)
        raise StationError(f"the manifests for {recipe.name} do not validate:\n{listed}", "nothing was written")
    header = (
        f"# station: recipe {recipe.name} (configuration {render.config_hash(recipe)}) for namespace "
        f"{where.namespace}; validated offline against the Kubernetes {where.kubernetes} schemas, not applied.\n"
        f"# Before applying: kubectl -n {where.namespace} create secret generic {API_KEY_SECRET['name']} "
        f'--from-literal={API_KEY_SECRET["key"]}="$(openssl rand -hex 24)"\n'
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(header + yaml.safe_dump_all(rendered, sort_keys=False))
    return rendered
