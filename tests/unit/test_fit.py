"""The memory fit: model cards, the cache sizes vLLM allocates, and a refusal with the numbers."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from station import paths
from station.errors import StationError
from station.recipes import fit, models
from station.recipes import recipe as recipes

BF16 = "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"
# A small hybrid with every part a fit counts: two attention layers, three Mamba layers, an MTP draft with attention
HYBRID = {
    "architectures": ["NemotronHForCausalLM"],
    "torch_dtype": "bfloat16",
    "hybrid_override_pattern": "M*ME*M",
    "mtp_hybrid_override_pattern": "*E",
    "num_hidden_layers": 6,
    "num_attention_heads": 32,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "hidden_size": 4096,
    "mamba_num_heads": 64,
    "mamba_head_dim": 64,
    "ssm_state_size": 128,
    "n_groups": 8,
    "conv_kernel": 4,
    "max_position_embeddings": 262144,
}


def test_a_hybrid_models_shape_counts_its_layers_by_kind() -> None:
    shape = models.Shape.of(HYBRID)
    assert (shape.attention_layers, shape.mamba.layers, shape.draft_attention_layers) == (2, 3, 1)
    assert (shape.kv_heads, shape.head_dim, shape.dtype) == (2, 128, "bfloat16")


def test_a_vision_language_models_language_model_is_what_is_sized() -> None:
    shape = models.Shape.of({"architectures": ["SomeVL"], "text_config": HYBRID})
    assert shape.architecture == "SomeVL" and shape.attention_layers == 2


def test_kv_cache_per_token_is_k_and_v_of_every_attention_layer_in_the_cache_dtype() -> None:
    shape = models.Shape.of(HYBRID)
    assert fit.kv_bytes_per_token(shape, {}, "bfloat16") == 2 * 2 * 2 * 128 * 2
    assert fit.kv_bytes_per_token(shape, {"kv-cache-dtype": "fp8"}, "bfloat16") == 2 * 2 * 2 * 128
    drafting = {"speculative-config": {"method": "mtp", "num_speculative_tokens": 1}}
    assert fit.kv_bytes_per_token(shape, drafting, "bfloat16") == 2 * 3 * 2 * 128 * 2  # the draft's layer too
    assert fit.kv_bytes_per_token(shape, {}, "bfloat16", tensor_parallel=4) == 2 * 2 * 1 * 128 * 2  # copies


def test_mamba_state_per_sequence_is_vllms_conv_and_ssm_shapes() -> None:
    """vLLM's mamba2_state_shape: conv (kernel - 1 + draft tokens) x (heads x head_dim + 2 x groups x state), SSM
    heads x head_dim x state, each in its own cache dtype."""
    shape = models.Shape.of(HYBRID)
    conv_dim = 64 * 64 + 2 * 8 * 128
    args = {"mamba-ssm-cache-dtype": "float32"}
    assert fit.mamba_bytes_per_sequence(shape, args, "bfloat16") == 3 * (3 * conv_dim * 2 + 64 * 64 * 128 * 4)
    drafting = args | {"speculative-config": {"num_speculative_tokens": 3}}
    assert fit.mamba_bytes_per_sequence(shape, drafting, "bfloat16") == 3 * (6 * conv_dim * 2 + 64 * 64 * 128 * 4)


def test_a_dense_model_keeps_no_mamba_state() -> None:
    tiny = models.card("/opt/station/models/tiny-llama").shape
    assert tiny.mamba is None and fit.mamba_bytes_per_sequence(tiny, {}, "float32") == 0
    assert (tiny.attention_layers, tiny.kv_heads, tiny.head_dim) == (2, 4, 64)


def test_a_cpu_engines_kv_cache_holds_its_space_over_the_bytes_of_a_token() -> None:
    smoke = recipes.load("cpu-smoke")
    space = int(smoke.engine.env["VLLM_CPU_KVCACHE_SPACE"]) * 2**30
    assert fit.cpu_kv_tokens(smoke, "bfloat16") == space // (2 * 2 * 4 * 64 * 2)
    assert fit.cpu_kv_tokens(smoke, "float32") == fit.cpu_kv_tokens(smoke, "bfloat16") // 2


@pytest.mark.parametrize(("gpu_memory_gib", "sequences"), [(48, 256), (80, 1024), (252, 1024)])
def test_a_recipe_that_leaves_max_num_seqs_out_is_sized_for_vllms_default_on_that_gpu(
    gpu_memory_gib, sequences
) -> None:
    step = recipes.load("nemotron-3.5-super-vl-gb300:0")
    args = {flag: value for flag, value in step.engine.args.items() if flag != "max-num-seqs"}
    unset = step.model_copy(update={"engine": step.engine.model_copy(update={"args": args})})
    sized = fit.fit(unset, gpu_memory_gib)
    assert sized.max_num_seqs == sequences
    assert (
        sized.mamba_state == sequences * fit.fit(step, gpu_memory_gib).mamba_state // step.engine.args["max-num-seqs"]
    )


def test_a_recipe_of_an_unknown_model_is_told_where_its_card_goes(tmp_path) -> None:
    path = tmp_path / "other.yml"
    path.write_text("extends: cpu-smoke\nname: other\nmodel: {id: someone/unknown, source: hub}\n")
    with pytest.raises(StationError, match="station knows no shape for the model someone/unknown") as error:
        fit.fit(recipes.load(str(path)), 80)
    assert "recipes/models/" in error.value.hint


def test_every_card_in_the_repository_reads_and_names_its_sources() -> None:
    assert models.cards(), "no model cards"
    for card in models.cards().values():
        assert card.shape.attention_layers > 0 and card.sources


GPU_RECIPES = [
    (name, label, chosen)
    for name in recipes.available()
    for label, chosen in recipes.load_labelled(name)
    if chosen.engine.container.gpus
]


@pytest.mark.parametrize(("name", "label", "chosen"), GPU_RECIPES, ids=[f"{n}:{label}" for n, label, _ in GPU_RECIPES])
def test_every_gpu_recipe_fits_the_memory_it_asks_provisioning_for(name, label, chosen) -> None:
    """gpu_memory_gib is what provisioning checks a host's GPUs against: the fit of each step on that much."""
    done = fit.fit(chosen, chosen.engine.container.gpu_memory_gib)
    assert done.fits, done.problem
    assert done.sequences >= chosen.bench.concurrency  # the benchmark's sequences all fit in the KV cache at once


def test_the_published_checkpoint_fits_a_dgx_station_and_bf16_does_not() -> None:
    """The published baseline used 67 GB of the GB300's 252: NVFP4. BF16's ~248 GB leave no room for a KV cache."""
    nvfp4 = recipes.load("nemotron-3.5-super-vl-gb300:0")
    assert fit.fit(nvfp4, 252).fits
    bf16 = nvfp4.model_copy(update={"model": nvfp4.model.model_copy(update={"id": BF16})})
    refused = fit.fit(bf16, 252)
    assert not refused.fits and refused.kv_tokens == 0
    assert "does not fit a GPU of 252 GiB: 231.0 GiB of weights" in refused.problem


def test_a_fit_refused_on_the_command_line_names_the_numbers_and_the_ways_out() -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "invoke", "fit", "--recipe", "nemotron-3.5-super-vl-gb300", "--gpu-memory-gib", "80"],
        cwd=paths.ROOT,
        capture_output=True,
        text=True,
        env=os.environ | {"COLUMNS": "200"},
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "nemotron-3.5-super-vl-gb300-step0 does not fit a GPU of 80 GiB" in ran.stdout
    assert "tensor-parallel-size" in ran.stderr and "step 5" in ran.stdout  # every step's row, then the refusal
