"""Will a recipe fit its GPU? Weights, Mamba state, a stated overhead and what is left for the KV cache, from the
model's card (recipes/models/) and the recipe's engine arguments, before anything is downloaded or started.

vLLM sizes its KV cache at start: the GPU's memory times --gpu-memory-utilization, less the weights and what its
profiling run peaked at. The peak is not known before a start, so it is a stated share of the GPU here (OVERHEAD).
A Mamba layer keeps one state per running sequence: max-num-seqs of them. The engine refuses to start when the KV
cache cannot hold one sequence of max-model-len; the fit refuses the same, and also reports how many sequences of the
recipe's benchmark length fit at once, beside max-num-seqs.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict

from station.errors import StationError
from station.recipes.models import BYTES, Shape, card, cards
from station.recipes.recipe import Recipe

GIB = 2**30
# vLLM 0.32.0's default --gpu-memory-utilization (vllm/config/cache.py: `gpu_memory_utilization: float = 0.92`)
DEFAULT_UTILIZATION = 0.92
# What vLLM's profiling run finds besides the weights (CUDA context, activations at max-num-batched-tokens, CUDA
# graphs, the sampler): a stated share of the GPU, not a measurement. Tens of GB on a 252 GB GPU are conservative.
OVERHEAD = 0.05
# vLLM's --max-num-seqs where a recipe leaves it out, by the GPU's memory (vllm/engine/arg_utils.py, get_batch_defaults,
# since v0.28.0: 1,024 from 70 GiB up, A100s aside, which keep 256; 256 below). An A100 of 80 GB is sized as the others:
# its Mamba state counted for 1,024 sequences, more than it gets.
LARGE_GPU_GIB = 70
DEFAULT_MAX_NUM_SEQS = {True: 1024, False: 256}


class Fit(BaseModel):
    """The memory budget of one recipe on one GPU (per GPU, under tensor parallelism), in bytes."""

    model_config = ConfigDict(frozen=True)

    recipe: str
    model: str
    gpu_bytes: int
    utilization: float
    tensor_parallel: int
    estimated: bool  # the model card's size and values come from related checkpoints
    weights: int
    mamba_state: int
    overhead: int
    kv_cache: int  # what is left for the attention KV cache
    kv_bytes_per_token: int
    max_model_len: int
    max_num_seqs: int
    sequence_tokens: int  # the recipe's benchmark: input + output tokens of one sequence

    @property
    def kv_tokens(self) -> int:
        return max(self.kv_cache, 0) // self.kv_bytes_per_token

    @property
    def sequences(self) -> int:
        """Sequences of the benchmark's length the KV cache holds at once."""
        return self.kv_tokens // self.sequence_tokens

    @property
    def needed_bytes(self) -> int:
        """The smallest GPU it fits: weights, Mamba state and one sequence of max-model-len, over vLLM's share less
        the overhead."""
        held = self.weights + self.mamba_state + self.max_model_len * self.kv_bytes_per_token
        return int(held / (self.utilization - OVERHEAD))

    @property
    def fits(self) -> bool:
        return self.kv_tokens >= self.max_model_len

    @property
    def problem(self) -> str:
        """Why it does not fit, with the numbers; empty when it fits."""
        if self.fits:
            return ""
        gib = self.gpu_bytes / GIB
        return (
            f"{self.recipe} does not fit a GPU of {gib:.0f} GiB: {self.weights / GIB:.1f} GiB of weights, "
            f"{self.mamba_state / GIB:.1f} GiB of Mamba state for {self.max_num_seqs} sequences and "
            f"{self.overhead / GIB:.1f} GiB of overhead leave {self.kv_cache / GIB:.1f} GiB of the "
            f"{self.utilization:.2f} x {gib:.0f} GiB budget for the KV cache: {self.kv_tokens:,} tokens, "
            f"where one sequence of max-model-len needs {self.max_model_len:,}"
        )


def require_fits(fits: list[Fit]) -> None:
    """Refuse the first that does not fit, with its numbers and the ways out."""
    refused = [fit.problem for fit in fits if not fit.fits]
    if refused:
        raise StationError(
            refused[0],
            "serve fewer sequences (max-num-seqs) or a shorter max-model-len, cache in FP8 (kv-cache-dtype fp8, "
            "mamba-ssm-cache-dtype float16), split the model (tensor-parallel-size), or choose a bigger GPU",
        )


def draft_tokens(args: dict[str, Any]) -> int:
    return int((args.get("speculative-config") or {}).get("num_speculative_tokens", 0))


def element_bytes(setting: Any, model_dtype: str) -> int:
    """The bytes of one cached element: a cache dtype flag's value, where `auto` (or none) is the model's dtype."""
    name = str(setting or "auto")
    return BYTES[model_dtype if name == "auto" else name]


def kv_bytes_per_token(shape: Shape, args: dict[str, Any], dtype: str, tensor_parallel: int = 1) -> int:
    """K and V of every attention layer (and the MTP draft's, where it drafts), for the heads on one GPU."""
    layers = shape.attention_layers + (shape.draft_attention_layers if draft_tokens(args) else 0)
    heads = max(shape.kv_heads // tensor_parallel, 1)  # fewer KV heads than GPUs: each GPU keeps a copy
    return 2 * layers * heads * shape.head_dim * element_bytes(args.get("kv-cache-dtype"), dtype)


def mamba_bytes_per_sequence(shape: Shape, args: dict[str, Any], dtype: str, tensor_parallel: int = 1) -> int:
    if shape.mamba is None:
        return 0
    conv = shape.mamba.conv_elements(draft_tokens(args)) * element_bytes(args.get("mamba-cache-dtype"), dtype)
    ssm = shape.mamba.ssm_elements * element_bytes(args.get("mamba-ssm-cache-dtype"), dtype)
    return shape.mamba.layers * (conv + ssm) // tensor_parallel


def engine_dtype(recipe: Recipe, shape: Shape, cpu_dtype: str = "") -> str:
    """The dtype the engine computes in: pinned in args, chosen from the host's CPU, or the checkpoint's own."""
    return str(recipe.engine.args.get("dtype") or cpu_dtype or shape.dtype)


def default_max_num_seqs(gpu_memory_gib: float) -> int:
    """The sequences vLLM runs at once on a GPU of that much memory when the recipe does not say."""
    return DEFAULT_MAX_NUM_SEQS[gpu_memory_gib >= LARGE_GPU_GIB]


def fit(recipe: Recipe, gpu_memory_gib: float) -> Fit:
    """The recipe on one GPU of that much memory."""
    model = card(recipe.model.id)
    args, shape = recipe.engine.args, model.shape
    dtype = engine_dtype(recipe, shape)
    tensor_parallel = int(args.get("tensor-parallel-size", 1))
    gpu_bytes = int(gpu_memory_gib * GIB)
    utilization = float(args.get("gpu-memory-utilization", DEFAULT_UTILIZATION))
    max_num_seqs = int(args.get("max-num-seqs", default_max_num_seqs(gpu_memory_gib)))
    weights = model.checkpoint_bytes // tensor_parallel
    mamba_state = max_num_seqs * mamba_bytes_per_sequence(shape, args, dtype, tensor_parallel)
    overhead = int(OVERHEAD * gpu_bytes)
    return Fit(
        recipe=recipe.name,
        model=recipe.model.id,
        gpu_bytes=gpu_bytes,
        utilization=utilization,
        tensor_parallel=tensor_parallel,
        estimated=model.estimated,
        weights=weights,
        mamba_state=mamba_state,
        overhead=overhead,
        kv_cache=int(utilization * gpu_bytes) - weights - mamba_state - overhead,
        kv_bytes_per_token=kv_bytes_per_token(shape, args, dtype, tensor_parallel),
        max_model_len=int(args.get("max-model-len", 0)) or model.config.get("max_position_embeddings", 0),
        max_num_seqs=max_num_seqs,
        sequence_tokens=recipe.bench.input_len + recipe.bench.output_len,
    )


def needed_gib(recipe: Recipe) -> int:
    """The memory each GPU must have, which provisioning and deploy check the host's GPUs against: the recipe's own
    gpu_memory_gib, or its fit's where station knows the model and it needs more; none for a CPU engine."""
    container = recipe.engine.container
    if not container.gpus:
        return 0
    if recipe.model.id not in cards():
        return container.gpu_memory_gib
    return max(container.gpu_memory_gib, math.ceil(fit(recipe, container.gpu_memory_gib).needed_bytes / GIB))


def cpu_kv_tokens(recipe: Recipe, cpu_dtype: str) -> int:
    """The tokens a CPU engine's KV cache holds: VLLM_CPU_KVCACHE_SPACE GiB, the engine's dtype per element."""
    if recipe.engine.container.gpus:
        raise StationError(f"{recipe.name} runs on GPUs", "fit it to a GPU's memory: invoke fit --gpu-memory-gib N")
    if "VLLM_CPU_KVCACHE_SPACE" not in recipe.engine.env:
        raise StationError(
            f"{recipe.name} leaves the CPU engine's KV cache to vLLM's own sizing",
            "set engine.env VLLM_CPU_KVCACHE_SPACE (GiB), which vLLM's CPU backend allocates whole",
        )
    shape = card(recipe.model.id).shape
    space = int(recipe.engine.env["VLLM_CPU_KVCACHE_SPACE"]) * GIB  # an integer, as vllm/platforms/cpu.py reads it
    return space // kv_bytes_per_token(shape, recipe.engine.args, engine_dtype(recipe, shape, cpu_dtype))
