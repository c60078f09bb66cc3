"""Recipe loading and field-level validation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from station.errors import StationError
from station.recipes import recipe


@pytest.mark.parametrize("name", recipe.available())
def test_every_shipped_recipe_is_valid(name: str) -> None:
    labelled = recipe.load_labelled(name)
    assert labelled
    assert recipe.load(name).name.startswith(name)


def test_cpu_smoke_has_the_published_traffic_shape() -> None:
    smoke = recipe.load("cpu-smoke")
    assert (smoke.bench.input_len, smoke.bench.output_len, smoke.bench.concurrency) == (512, 512, 256)
    assert smoke.engine.container.gpus is False
    assert smoke.engine.build == "vllm-cpu"
    assert smoke.reference is not None and smoke.reference.output_throughput == 11840


def test_a_recipe_loads_from_a_path(cpu_smoke_data, write_recipe) -> None:
    assert recipe.load(str(write_recipe(cpu_smoke_data))).name == "cpu-smoke"


def test_unknown_recipe_lists_the_available_ones() -> None:
    with pytest.raises(StationError) as error:
        recipe.load("no-such-recipe")
    assert "unknown recipe 'no-such-recipe'" in error.value.problem
    assert "cpu-smoke" in error.value.hint


def test_missing_recipe_file_is_named() -> None:
    with pytest.raises(StationError, match=r"recipe file /nope/r\.yml does not exist"):
        recipe.load("/nope/r.yml")


def test_invalid_yaml_is_reported(tmp_path) -> None:
    path = tmp_path / "broken.yml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(StationError, match="is not valid YAML"):
        recipe.load(str(path))


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        data = data.setdefault(part, {})
    data[last] = value


@pytest.mark.parametrize(
    ("field", "value", "where", "message"),
    [
        ("engine.image", "station.invalid/vllm-cpu:latest", "engine.image", "uses 'latest'"),
        ("engine.image", "station.invalid/vllm-cpu", "engine.image", "has no tag or digest"),
        ("engine.image", "registry:5000/vllm", "engine.image", "has no tag or digest"),
        ("engine.build", None, "engine", "pin it by digest"),
        ("engine.build", "no-such-folder", "engine", "docker/no-such-folder/Dockerfile does not exist"),
        ("engine.image", "station/vllm-cpu:0.32.0", "engine", "a name no registry can hold"),
        ("engine.args", {"--max-num-seqs": 8}, "engine.args", "write it without dashes"),
        ("engine.args", {"port": 9000}, "engine.args", "--port is set by station"),
        ("engine.args", {"model": "x"}, "engine.args", "--model is set by station from model.id"),
        ("engine.args", {"hf-token": "hf_x"}, "engine.args", "--hf-token is set by station from the token file"),
        ("engine.args", {"revision": "main"}, "engine.args", "--revision is set by station from model.revision"),
        ("engine.env", {"VLLM_API_KEY": "x"}, "engine.env", "VLLM_API_KEY is set by station"),
        ("engine.env", {"lower": "x"}, "engine.env", "is not an environment variable name"),
        ("engine.env", {"FLAG": True}, "engine.env", "must be text or numbers"),
        ("engine.container.shm_size", "lots", "engine.container.shm_size", "should match pattern"),
        ("engine.container.gpus", True, "engine", "dtype_from_cpu chooses a CPU engine's dtype"),
        ("engine.vllm_version", "latest", "engine.vllm_version", "should match pattern"),
        ("bench.num_prompts", 10, "bench", "below concurrency"),
        ("bench.input_len", 0, "bench.input_len", "greater than 0"),
        ("bench.warmups", -1, "bench.warmups", "greater than or equal to 0"),
        ("model.id", "relative/path", "(top level)", "is an absolute path"),
        ("model.source", "s3", "model.source", "'hub' or 'image'"),
        ("model.inputs", ["image"], "model.inputs", "must list text"),
        ("model.inputs", ["text", "text"], "model.inputs", "each input once"),
        ("model.inputs", ["text", "audio"], "model.inputs.1", "Input should be 'text' or 'image'"),
        ("name", "Has Spaces", "name", "should match pattern"),
        ("surprise", 1, "surprise", "Extra inputs are not permitted"),
        ("router.policy", "kv_aware", "router.policy", "Input should be 'cache_aware'"),
        ("router.cache_threshold", 1.5, "router.cache_threshold", "less than or equal to 1"),
        ("router.balance_rel_threshold", 0.5, "router.balance_rel_threshold", "greater than or equal to 1"),
        ("router", {"policy": "round_robin", "balance_abs_threshold": 8}, "router", "not round_robin"),
    ],
)
def test_invalid_fields_are_named(cpu_smoke_data, write_recipe, field, value, where, message) -> None:
    _set(cpu_smoke_data, field, value)
    with pytest.raises(StationError) as error:
        recipe.load(str(write_recipe(cpu_smoke_data)))
    assert f"  - {where}: " in error.value.problem
    assert message in error.value.problem


def test_a_pulled_image_pinned_by_digest_is_accepted(cpu_smoke_data, write_recipe) -> None:
    cpu_smoke_data["engine"]["build"] = None
    cpu_smoke_data["engine"]["image"] = "vllm/vllm-openai:v0.32.0@sha256:" + "a" * 64
    assert recipe.load(str(write_recipe(cpu_smoke_data))).engine.image.endswith("a" * 64)


def test_numeric_env_values_become_text(cpu_smoke_data, write_recipe) -> None:
    cpu_smoke_data["engine"]["env"] = {"OMP_NUM_THREADS": 1}
    assert recipe.load(str(write_recipe(cpu_smoke_data))).engine.env == {"OMP_NUM_THREADS": "1"}


def test_every_problem_is_listed_at_once(cpu_smoke_data, write_recipe) -> None:
    cpu_smoke_data["engine"]["image"] = "x:latest"
    cpu_smoke_data["bench"]["output_len"] = -5
    with pytest.raises(StationError) as error:
        recipe.load(str(write_recipe(cpu_smoke_data)))
    assert "engine.image" in error.value.problem and "bench.output_len" in error.value.problem


TEMPLATED = "{{ lookup('pipe', 'touch /tmp/station-owned') }}"


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("engine.args.max-model-len", {"engine": {"args": {"max-model-len": TEMPLATED}}}),
        ("engine.env.OMP_NUM_THREADS", {"engine": {"env": {"OMP_NUM_THREADS": "{% raw %}1{% endraw %}"}}}),
        ("model.id", {"model": {"id": "org/{# hidden #}model"}}),
        ("description", {"description": TEMPLATED}),
    ],
)
def test_template_syntax_anywhere_is_refused_before_ansible_sees_it(write_recipe, cpu_smoke_data, field, change):
    path = write_recipe(recipe.merge(cpu_smoke_data, change))
    with pytest.raises(StationError) as error:
        recipe.load(str(path))
    assert f"{field} holds template syntax" in error.value.problem
    assert "which Ansible would run on this machine" in error.value.problem


def test_template_syntax_is_refused_through_extends(tmp_path) -> None:
    (tmp_path / "child.yml").write_text(f'extends: cpu-smoke\nengine:\n  args:\n    served: "{TEMPLATED}"\n')
    with pytest.raises(StationError, match=r"engine\.args\.served holds template syntax"):
        recipe.load(str(tmp_path / "child.yml"))


@pytest.mark.parametrize("name", ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "OPENAI_API_KEY", "DB_PASSWORD", "AWS_SECRET"])
def test_secret_looking_env_names_are_refused(write_recipe, cpu_smoke_data, name: str) -> None:
    cpu_smoke_data["engine"]["env"][name] = "x"
    with pytest.raises(StationError) as error:
        recipe.load(str(write_recipe(cpu_smoke_data)))
    assert f"engine.env: {name} looks like a secret" in error.value.problem


@pytest.mark.parametrize("build", ["../../etc", "/abs", "vllm cpu", "Vllm"])
def test_engine_build_is_a_folder_name_only(write_recipe, cpu_smoke_data, build: str) -> None:
    cpu_smoke_data["engine"]["build"] = build
    with pytest.raises(StationError, match=r"engine\.build"):
        recipe.load(str(write_recipe(cpu_smoke_data)))


def test_argument_checks_are_split_to_fit_one_command_line_argument() -> None:
    from station.deploy import argcheck

    checks = [{"label": f"c{i}", "argv": ["--x", "y" * 1000]} for i in range(300)]
    grouped = argcheck.batches(checks)
    assert [check for batch in grouped for check in batch] == checks
    assert len(grouped) > 1 and all(len(json.dumps(batch)) <= argcheck.MAX_ARGUMENT_BYTES for batch in grouped)


def test_rejected_arguments_are_each_named_with_the_parser_that_refused_them() -> None:
    from station.deploy import argcheck

    accepted = argcheck.Verdict(label="a", ok=True)
    refused = argcheck.Verdict(label="b step 1", ok=False, flag="--x", error="unrecognized argument", suggestion="--y")
    argcheck.require_valid([("one:1", [accepted]), ("two:2", [accepted])])
    with pytest.raises(StationError) as raised:
        argcheck.require_valid([("one:1", [accepted]), ("two:2", [refused])])
    assert "  - b step 1: --x: unrecognized argument; nearest valid spelling: --y (vLLM in two:2)" in str(raised.value)
    assert "one:1" not in str(raised.value)
