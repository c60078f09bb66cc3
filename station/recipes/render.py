"""Render a recipe into what runs: the engine's argv and env, the benchmark's argv, Ansible vars."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from station.errors import StationError
from station.recipes import fit
from station.recipes.recipe import CACHE_AWARE_SETTINGS, SCALE_OUT_FLAG, ArgValue, Recipe

FULL_COMMIT = re.compile(r"[0-9a-f]{40}")

# The engine listens here inside its container; hosts publish it on vllm_server_port.
ENGINE_CONTAINER_PORT = 8000
# The API key on every route, not only /v1 (ansible/roles/vllm_server/files/station_auth.py, mounted by the role).
KEY_MIDDLEWARE = "station_auth.KeyOnEveryRoute"
PERCENTILE_METRICS = "ttft,tpot,itl,e2el"
METRIC_PERCENTILES = "50,90,99"


def flag(name: str, value: ArgValue) -> list[str]:
    """One recipe arg as argv: true → --x, false → --no-x, mappings and lists → compact JSON."""
    if value is True:
        return [f"--{name}"]
    if value is False:
        return [f"--no-{name}"]
    if isinstance(value, dict | list):
        return [f"--{name}", json.dumps(value, separators=(",", ":"))]
    return [f"--{name}", str(value)]


def serve_argv(recipe: Recipe) -> list[str]:
    """Arguments to `vllm serve` (the engine image's entrypoint); where the engine follows the host's CPU
    (engine.dtype_from_cpu), the vllm_server role adds `--dtype` there."""
    argv = [
        "--model",
        recipe.model.id,
        "--served-model-name",
        recipe.model.served_name,
        "--host",
        "0.0.0.0",
        "--port",
        str(ENGINE_CONTAINER_PORT),
        "--middleware",
        KEY_MIDDLEWARE,
    ]
    if recipe.model.revision:
        argv += ["--revision", recipe.model.revision]
        if recipe.engine.args.get("trust-remote-code") and "code-revision" not in recipe.engine.args:
            argv += ["--code-revision", recipe.model.revision]  # the Hub code that runs is the pinned commit's
    if "allowed-origins" not in recipe.engine.args:
        argv += ["--allowed-origins", "[]"]  # no cross-origin requests unless the recipe names origins
    if SCALE_OUT_FLAG not in recipe.engine.args:
        argv += [f"--{SCALE_OUT_FLAG}"]  # on whatever the routing: changing it restarts the routers, not the engines
    for name, value in recipe.engine.args.items():
        argv += flag(name, value)
    return argv


def require_pinned_remote_code(recipe: Recipe) -> None:
    """Refuse to run a hub model's own code unless it is pinned to a commit: it runs as root with every GPU."""
    trusted = recipe.engine.args.get("trust-remote-code") and recipe.model.source == "hub"
    code_revision = recipe.engine.args.get("code-revision")
    if trusted and code_revision is not None and not FULL_COMMIT.fullmatch(str(code_revision)):
        raise StationError(
            f"{recipe.name} sets trust-remote-code with code-revision {code_revision}, which is not a commit",
            "give code-revision the model repository's full 40-character commit id, or leave it out "
            "(the code of model.revision runs)",
        )
    if trusted and not FULL_COMMIT.fullmatch(recipe.model.revision or ""):
        raise StationError(
            f"{recipe.name} sets trust-remote-code, which runs {recipe.model.id}'s own Python code, "
            f"but pins no commit (model.revision: {recipe.model.revision or 'none'})",
            "set model.revision to the model repository's full 40-character commit id (extends: and base: model: "
            "revision: ... in a recipe of your own), or drop trust-remote-code",
        )


def bench_args(recipe: Recipe) -> list[str]:
    """Arguments to `vllm bench serve` that come from the recipe; the role adds the target and output."""
    profile = recipe.bench
    return [
        "--backend",
        "vllm",
        "--model",
        recipe.model.served_name,
        "--tokenizer",
        recipe.model.id,
        "--dataset-name",
        "random",
        "--random-input-len",
        str(profile.input_len),
        "--random-output-len",
        str(profile.output_len),
        "--random-range-ratio",
        "0",
        "--ignore-eos",
        "--max-concurrency",
        str(profile.concurrency),
        "--num-prompts",
        str(profile.num_prompts),
        "--num-warmups",
        str(profile.warmups),
        "--seed",
        "0",
        "--percentile-metrics",
        PERCENTILE_METRICS,
        "--metric-percentiles",
        METRIC_PERCENTILES,
    ]


def config_hash(recipe: Recipe) -> str:
    """Identifies what the engine container runs; the bench checks it before measuring."""
    engine = {
        "image": recipe.engine.image,
        "argv": serve_argv(recipe),
        "env": recipe.engine.env,
        "container": recipe.engine.container.model_dump(),
    }
    if recipe.engine.follows_cpu:
        engine["dtype_from_cpu"] = True  # the host's CPU adds --dtype: a configuration of its own
    return hashlib.sha256(json.dumps(engine, sort_keys=True).encode()).hexdigest()[:16]


def routing_args(recipe: Recipe) -> list[str]:
    """vllm-router's arguments for the recipe's routing: its policy, then the settings the recipe gives it."""
    router = recipe.router
    settings = router.model_dump(include=set(CACHE_AWARE_SETTINGS), exclude_none=True)
    return [f"--policy={router.policy}", *(f"--{name.replace('_', '-')}={value}" for name, value in settings.items())]


def allowed_origins(recipe: Recipe) -> list[str]:
    """The web origins the recipe lets call the API from a browser (none unless it names them)."""
    origins = recipe.engine.args.get("allowed-origins", [])
    return json.loads(origins) if isinstance(origins, str) else list(origins)


def engine_vars(recipe: Recipe) -> dict[str, Any]:
    """Extra-vars for the serving roles: everything the recipe decides about the engine and its router."""
    container = recipe.engine.container
    return {
        "vllm_server_recipe": recipe.name,
        "vllm_server_image": recipe.engine.image,
        "vllm_server_version": recipe.engine.vllm_version,
        "vllm_server_command": serve_argv(recipe),
        "vllm_server_dtype_from_cpu": recipe.engine.follows_cpu,
        "vllm_server_env": dict(recipe.engine.env),
        "vllm_server_container_port": ENGINE_CONTAINER_PORT,
        "vllm_server_gpus": container.gpus,
        "vllm_server_gpu_memory_gib": fit.needed_gib(recipe),
        "vllm_server_shm_size": container.shm_size,
        "vllm_server_ipc_host": container.ipc_host,
        "vllm_server_served_model_name": recipe.model.served_name,
        "vllm_server_health_timeout_s": recipe.engine.health_timeout_s,
        "vllm_server_config_hash": config_hash(recipe),
        "vllm_router_cors_allowed_origins": allowed_origins(recipe),
        "vllm_router_routing": routing_args(recipe),
    }


def bench_vars(recipe: Recipe, run_id: str) -> dict[str, Any]:
    """Extra-vars for the vllm_bench role, including the engine configuration it must find."""
    return {
        "vllm_bench_run_id": run_id,
        "vllm_bench_recipe": recipe.name,
        "vllm_bench_args": bench_args(recipe),
        "vllm_bench_timeout_s": recipe.bench.timeout_s,
        "vllm_bench_config_hash": config_hash(recipe),
    }
