"""Ladders as data: steps as changes on the previous step, published figures, variants."""

from __future__ import annotations

import pytest
import yaml

from station.errors import StationError
from station.recipes import recipe

GB300 = "nemotron-3.5-super-vl-gb300"
RECIPE_FACTS_FIGURES = [6058, 7000, None, 7800, 9500, 11840]


@pytest.fixture(scope="module")
def gb300() -> recipe.Ladder:
    return recipe.load_ladder(GB300)


def test_gb300_steps_carry_the_published_figures(gb300) -> None:
    assert [gb300.published(index) for index in range(len(gb300.steps))] == RECIPE_FACTS_FIGURES


AGENT_SERVING = {
    "enable-auto-tool-choice": True,
    "tool-call-parser": "qwen3_xml",
    "reasoning-parser": "nemotron_v3",
    "max-model-len": 262144,
}


def test_gb300_step0_is_defaults_with_fp32_state_and_256_sequences_and_agent_serving(gb300) -> None:
    args = gb300.recipe(0).engine.args
    assert args == {"max-num-seqs": 256, "mamba-ssm-cache-dtype": "float32"} | AGENT_SERVING
    assert gb300.recipe(0).bench.model_dump(include={"input_len", "output_len", "concurrency"}) == {
        "input_len": 512,
        "output_len": 512,
        "concurrency": 256,
    }


def test_gb300_each_step_keeps_the_ones_before(gb300) -> None:
    last = gb300.recipe(5)
    assert last.engine.args["speculative-config"] == {"method": "mtp", "num_speculative_tokens": 1}
    assert last.engine.args["async-scheduling"] is True
    assert last.engine.args["mamba-backend"] == "flashinfer"
    assert last.engine.args["mamba-ssm-cache-dtype"] == "float16"
    assert last.engine.args["enable-mamba-cache-stochastic-rounding"] is True
    assert last.engine.env == {"OMP_NUM_THREADS": "1"}
    assert gb300.recipe(3).engine.args["speculative-config"]["num_speculative_tokens"] == 3


def test_deploy_uses_the_last_step_and_a_step_can_be_chosen() -> None:
    assert recipe.load(GB300).name == f"{GB300}-step5"
    assert recipe.load(f"{GB300}:2").engine.args.get("mamba-backend") is None
    with pytest.raises(StationError, match="has no step '9'"):
        recipe.load(f"{GB300}:9")


def test_gb300_serves_the_nvfp4_checkpoint_with_the_architecture_built_into_vllm(gb300) -> None:
    """The published baseline used 67 GB: NVFP4's size; vLLM has NemotronH_Omni_Reasoning_V3 built in since 0.29."""
    for index in range(len(gb300.steps)):
        chosen = gb300.recipe(index)
        assert chosen.model.id == "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-NVFP4"
        assert "trust-remote-code" not in chosen.engine.args


def test_gb300_is_a_pinned_source_build_with_its_version(gb300) -> None:
    engine = gb300.recipe(0).engine
    assert engine.build == "vllm"
    assert engine.build_args["VLLM_COMMIT"] in engine.vllm_version
    assert engine.container.gpus and engine.container.gpu_memory_gib > 0


RELEASE = f"{GB300}-release"


def test_the_release_variant_changes_only_the_engine_and_names_where_the_figures_came_from(gb300) -> None:
    """The fast path pulls vLLM's release image by digest instead of building the nightly: every step's flags and
    environment are the measured ladder's, and each published figure says it was measured on the nightly."""
    release = recipe.load_ladder(RELEASE)
    for index in range(len(gb300.steps)):
        built, pulled = gb300.recipe(index), release.recipe(index)
        assert (pulled.engine.args, pulled.engine.env) == (built.engine.args, built.engine.env)
        assert pulled.engine.build is None and pulled.engine.build_args == {}
        assert pulled.engine.image.startswith(f"vllm/vllm-openai:v{pulled.engine.vllm_version}@sha256:")
        assert release.published(index) == gb300.published(index)
        if pulled.reference:
            assert f"nightly vLLM {built.engine.vllm_version}, not on this release" in pulled.reference.source


@pytest.mark.parametrize("variant", ["nemotron-3.5-super-vl-h100-h200", "nemotron-3.5-super-vl-b200"])
def test_variants_are_unmeasured_and_show_no_published_figure(variant: str) -> None:
    ladder = recipe.load_ladder(variant)
    assert not ladder.measured
    assert all(ladder.recipe(index).reference is None for index in range(len(ladder.steps)))
    assert ladder.recipe(0).model.id.rsplit("-", 1)[1] in {"NVFP4", "BF16"}  # the checkpoints NVIDIA publishes
    assert any("Unmeasured" in caveat for caveat in ladder.caveats)


def test_a_user_recipe_overrides_the_model_id_by_extending(tmp_path) -> None:
    mine = tmp_path / "mine.yml"
    mine.write_text(yaml.safe_dump({"extends": GB300, "base": {"model": {"id": "nvidia/Real-Id"}}}))
    ladder = recipe.load_ladder(str(mine))
    assert ladder.recipe(5).model.id == "nvidia/Real-Id"
    assert ladder.recipe(5).model.served_name == "nemotron-3.5-super-vl"
    assert len(ladder.steps) == 6


def test_null_in_a_step_removes_a_flag(tmp_path) -> None:
    data = yaml.safe_load((recipe.paths.RECIPES / "cpu-ladder.yml").read_text())
    data["steps"].append({"change": "drop the dtype", "args": {"dtype": None}})
    path = tmp_path / "ladder.yml"
    path.write_text(yaml.safe_dump(data))
    ladder = recipe.load_ladder(str(path))
    assert "dtype" in ladder.recipe(1).engine.args
    assert "dtype" not in ladder.recipe(len(ladder.steps) - 1).engine.args


def test_a_step_that_makes_an_invalid_recipe_is_named(tmp_path) -> None:
    data = yaml.safe_load((recipe.paths.RECIPES / "cpu-ladder.yml").read_text())
    data["steps"][2]["args"] = {"port": 9000}
    path = tmp_path / "ladder.yml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(StationError) as error:
        recipe.load_ladder(str(path))
    assert "step 2 (batched-token budget 8192)" in error.value.problem
    assert "--port is set by station" in error.value.problem


def test_a_plain_recipe_is_not_a_ladder() -> None:
    with pytest.raises(StationError, match="is not a ladder"):
        recipe.load_ladder("cpu-smoke")


def test_extends_cycle_is_reported(tmp_path) -> None:
    (tmp_path / "a.yml").write_text(yaml.safe_dump({"extends": str(tmp_path / "b.yml")}))
    (tmp_path / "b.yml").write_text(yaml.safe_dump({"extends": str(tmp_path / "a.yml")}))
    with pytest.raises(StationError, match="extends itself"):
        recipe.load(str(tmp_path / "a.yml"))


def test_labelled_recipes_name_each_step() -> None:
    labels = [label for label, _ in recipe.load_labelled("cpu-ladder")]
    assert labels[0] == "step 0 (vLLM defaults, eager (the checkpoint's bfloat16, 256 sequences))"
    assert len(labels) == len(recipe.load_ladder("cpu-ladder").steps)
    assert [label for label, _ in recipe.load_labelled("cpu-smoke")] == ["cpu-smoke"]


def test_recipes_of_several_files_are_each_labelled_with_the_file_as_given(tmp_path) -> None:
    (mine := tmp_path / "mine.yml").write_text("extends: cpu-smoke\n")
    labels = [label for label, _ in recipe.load_all_labelled([str(mine), "cpu-smoke", "cpu-ladder"])]
    assert labels[:2] == [str(mine), "cpu-smoke"]  # not "cpu-smoke" twice: mine.yml inherits that name
    assert labels[2] == "cpu-ladder step 0 (vLLM defaults, eager (the checkpoint's bfloat16, 256 sequences))"
    assert len(labels) == 2 + len(recipe.load_ladder("cpu-ladder").steps)
    assert recipe.load_all_labelled(["cpu-ladder"]) == recipe.load_labelled("cpu-ladder")


@pytest.mark.parametrize("name", [GB300, RELEASE, "nemotron-3.5-super-vl-h100-h200", "nemotron-3.5-super-vl-b200"])
def test_every_nemotron_step_serves_agents_with_vllms_nemotron_parsers(name: str) -> None:
    ladder = recipe.load_ladder(name)
    for index in range(len(ladder.steps)):
        args = ladder.recipe(index).engine.args
        assert {flag: args.get(flag) for flag in AGENT_SERVING} == AGENT_SERVING
