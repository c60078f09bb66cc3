"""Rendering a recipe into the engine's argv/env, the benchmark's argv and Ansible vars."""

from __future__ import annotations

import itertools

import pytest
import yaml
from rich.console import Console

from station import paths
from station.deploy import candidate
from station.errors import StationError
from station.recipes import recipe, render


@pytest.fixture
def smoke() -> recipe.Recipe:
    return recipe.load("cpu-smoke")


@pytest.mark.parametrize(
    ("value", "argv"),
    [
        (True, ["--async-scheduling"]),
        (False, ["--no-async-scheduling"]),
        (256, ["--async-scheduling", "256"]),
        (0.5, ["--async-scheduling", "0.5"]),
        ("fp8", ["--async-scheduling", "fp8"]),
        (
            {"method": "mtp", "num_speculative_tokens": 3},
            ["--async-scheduling", '{"method":"mtp","num_speculative_tokens":3}'],
        ),
        ([1, 2], ["--async-scheduling", "[1,2]"]),
    ],
)
def test_flag_rendering(value, argv) -> None:
    assert render.flag("async-scheduling", value) == argv


def test_serve_argv_is_station_flags_then_recipe_args_in_order(smoke) -> None:
    assert render.serve_argv(smoke) == [
        "--model",
        "/opt/station/models/tiny-llama",
        "--served-model-name",
        "tiny-llama",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--middleware",
        "station_auth.KeyOnEveryRoute",
        "--allowed-origins",
        "[]",
        "--enable-scale-out",
        "--load-format",
        "dummy",
        "--enforce-eager",
        "--max-model-len",
        "32768",
        "--max-num-seqs",
        "256",
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
        "--structured-outputs-config",
        '{"backend":"xgrammar","disable_any_whitespace":true}',
        "--tool-strict-level",
        "parameter",
    ]


def test_bench_args_carry_the_profile(smoke) -> None:
    args = render.bench_args(smoke)
    pairs = dict(itertools.pairwise(args))
    assert pairs["--random-input-len"] == "512"
    assert pairs["--random-output-len"] == "512"
    assert pairs["--max-concurrency"] == "256"
    assert pairs["--num-prompts"] == str(smoke.bench.num_prompts)
    assert pairs["--num-warmups"] == str(smoke.bench.warmups)
    assert pairs["--model"] == "tiny-llama"
    assert pairs["--tokenizer"] == "/opt/station/models/tiny-llama"
    assert "--ignore-eos" in args


def test_the_host_s_cpu_sets_the_dtype_of_an_engine_that_follows_it_unless_args_pin_one(smoke) -> None:
    """cpu-smoke leaves --dtype to the host's CPU (the vllm_server role adds it): a configuration of its own, which a
    pinned dtype replaces."""
    assert smoke.engine.follows_cpu and "--dtype" not in render.serve_argv(smoke)
    assert render.engine_vars(smoke)["vllm_server_dtype_from_cpu"] is True
    pinned = smoke.model_copy(
        update={"engine": smoke.engine.model_copy(update={"args": smoke.engine.args | {"dtype": "float32"}})}
    )
    assert not pinned.engine.follows_cpu and render.engine_vars(pinned)["vllm_server_dtype_from_cpu"] is False
    asked_not = smoke.model_copy(update={"engine": smoke.engine.model_copy(update={"dtype_from_cpu": False})})
    assert render.serve_argv(asked_not) == render.serve_argv(smoke)
    assert render.config_hash(asked_not) != render.config_hash(smoke)


def test_config_hash_follows_the_engine_configuration(smoke) -> None:
    changed = smoke.model_copy(
        update={"engine": smoke.engine.model_copy(update={"args": {**smoke.engine.args, "max-num-seqs": 128}})}
    )
    retuned_bench = smoke.model_copy(update={"bench": smoke.bench.model_copy(update={"num_prompts": 512})})
    assert render.config_hash(smoke) == render.config_hash(recipe.load("cpu-smoke"))
    assert render.config_hash(changed) != render.config_hash(smoke)
    assert render.config_hash(retuned_bench) == render.config_hash(smoke)


def _role_options(role: str) -> set[str]:
    spec = yaml.safe_load((paths.ANSIBLE / "roles" / role / "meta" / "argument_specs.yml").read_text())
    return {name for entry in spec["argument_specs"].values() for name in entry.get("options", {})}


def test_engine_vars_are_all_options_of_the_serving_roles(smoke) -> None:
    assert set(render.engine_vars(smoke)) <= _role_options("vllm_server") | _role_options("vllm_router")


@pytest.mark.parametrize(
    ("value", "origins"),
    [(None, []), (["https://app.example"], ["https://app.example"]), ('["https://a.example"]', ["https://a.example"])],
)
def test_the_router_allows_the_origins_the_recipe_names_and_none_otherwise(smoke, value, origins) -> None:
    args = dict(smoke.engine.args) | ({"allowed-origins": value} if value is not None else {})
    recipe = smoke.model_copy(update={"engine": smoke.engine.model_copy(update={"args": args})})
    assert render.engine_vars(recipe)["vllm_router_cors_allowed_origins"] == origins


@pytest.mark.parametrize(
    ("router", "routing"),
    [
        ({}, ["--policy=cache_aware"]),
        ({"policy": "round_robin"}, ["--policy=round_robin"]),
        (
            {"balance_abs_threshold": 8, "cache_threshold": 0.5},
            ["--policy=cache_aware", "--cache-threshold=0.5", "--balance-abs-threshold=8"],
        ),
    ],
)
def test_the_router_routes_as_the_recipe_says(smoke, router: dict, routing: list[str]) -> None:
    routed = smoke.model_copy(update={"router": recipe.Router(**router)})
    assert render.engine_vars(routed)["vllm_router_routing"] == routing


def test_bench_vars_are_all_options_of_the_vllm_bench_role(smoke) -> None:
    assert set(render.bench_vars(smoke, "run-1")) <= _role_options("vllm_bench")


def test_engine_env_is_a_copy_of_the_recipe_env(smoke) -> None:
    assert render.engine_vars(smoke)["vllm_server_env"] == {"VLLM_CPU_KVCACHE_SPACE": "2", "TORCHDYNAMO_DISABLE": "1"}


def test_cross_origin_requests_are_off_unless_the_recipe_names_origins(smoke) -> None:
    assert render.serve_argv(smoke).count("--allowed-origins") == 1
    args = dict(smoke.engine.args) | {"allowed-origins": ["https://agents.example"]}
    named = smoke.model_copy(update={"engine": smoke.engine.model_copy(update={"args": args})})
    argv = render.serve_argv(named)
    assert argv.count("--allowed-origins") == 1
    assert argv[argv.index("--allowed-origins") + 1] == '["https://agents.example"]'


def test_engines_serve_the_render_endpoint_the_router_routes_by_unless_the_recipe_says_otherwise(smoke) -> None:
    assert render.serve_argv(smoke).count("--enable-scale-out") == 1
    for policy in ("cache_aware", "round_robin"):  # one engine argv for both: a routing change leaves engines be
        routed = smoke.model_copy(update={"router": recipe.Router(policy=policy)})
        assert render.config_hash(routed) == render.config_hash(smoke)
    args = dict(smoke.engine.args) | {"enable-scale-out": False}
    engine = smoke.engine.model_copy(update={"args": args})
    argv = render.serve_argv(smoke.model_copy(update={"engine": engine, "router": recipe.Router(policy="random")}))
    assert "--enable-scale-out" not in argv and argv.count("--no-enable-scale-out") == 1
    with pytest.raises(ValueError, match="enable-scale-out: false turns off"):
        recipe.Recipe.model_validate(smoke.model_dump() | {"engine": engine.model_dump()})


COMMIT = "0123456789abcdef0123456789abcdef01234567"


def hub_recipe(revision: str | None, **args) -> recipe.Recipe:
    """A Hub model that needs its own code (the flagship's does not: vLLM has its architecture built in)."""
    gb300 = recipe.load("nemotron-3.5-super-vl-gb300:0")
    model = gb300.model.model_copy(update={"revision": revision})
    engine = gb300.engine.model_copy(update={"args": dict(gb300.engine.args) | {"trust-remote-code": True} | args})
    return gb300.model_copy(update={"model": model, "engine": engine})


@pytest.mark.parametrize("revision", [None, "main", "3f1bcfd82", COMMIT.upper()])
def test_remote_code_without_a_full_commit_is_refused(revision) -> None:
    with pytest.raises(StationError) as error:
        render.require_pinned_remote_code(hub_recipe(revision))
    assert "sets trust-remote-code" in error.value.problem and "pins no commit" in error.value.problem
    assert "40-character commit" in error.value.hint


def test_remote_code_pinned_to_a_commit_runs_that_commits_code() -> None:
    pinned = hub_recipe(COMMIT)
    render.require_pinned_remote_code(pinned)
    argv = render.serve_argv(pinned)
    assert argv[argv.index("--revision") + 1] == argv[argv.index("--code-revision") + 1] == COMMIT


def test_a_code_revision_that_is_not_a_commit_is_refused() -> None:
    with pytest.raises(StationError, match="code-revision main, which is not a commit"):
        render.require_pinned_remote_code(hub_recipe(COMMIT, **{"code-revision": "main"}))
    render.require_pinned_remote_code(hub_recipe(COMMIT, **{"code-revision": COMMIT}))


def test_a_held_back_candidate_is_refused_remote_code_without_a_commit_before_anything_starts(monkeypatch) -> None:
    started = []
    monkeypatch.setattr(candidate, "_drive", lambda *args: started.append(args))
    with pytest.raises(StationError, match="pins no commit"):
        candidate.start("local", hub_recipe(None), Console())
    assert not started


def test_a_model_without_remote_code_needs_no_commit() -> None:
    render.require_pinned_remote_code(hub_recipe(None, **{"trust-remote-code": False}))
    render.require_pinned_remote_code(recipe.load("cpu-smoke"))
