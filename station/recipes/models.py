"""What a recipe's model is made of, as far as memory goes: its checkpoint's size and the config.json values that size
its KV cache and its Mamba state, kept in recipes/models/ with where each was read (the GPU models' checkpoints are
not downloadable here), or generated (the tiny CPU model's)."""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from station import paths
from station.errors import StationError
from station.generators import tiny_model

MODELS = paths.RECIPES / "models"
BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
# config.json marks each layer of a hybrid (NemotronH) model with a letter: M Mamba, * attention, - MLP, E MoE
MAMBA, ATTENTION = "M", "*"
# The tiny models' config.json values, as station/generators/tiny_model.py writes them
GENERATED = {"generated": tiny_model.CONFIG, "generated-vision": tiny_model.VISION_CONFIG}


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Mamba(_Frozen):
    """A Mamba-2 layer's state per sequence: a convolution history and the SSM state."""

    layers: int = Field(gt=0)
    heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    state_size: int = Field(gt=0)
    groups: int = Field(gt=0)
    conv_kernel: int = Field(gt=1)

    def conv_elements(self, draft_tokens: int) -> int:
        """vLLM's conv state: (kernel - 1 + draft tokens) x (heads x head_dim + 2 x groups x state_size), per layer."""
        return (self.conv_kernel - 1 + draft_tokens) * (self.heads * self.head_dim + 2 * self.groups * self.state_size)

    @property
    def ssm_elements(self) -> int:
        """vLLM's temporal (SSM) state: heads x head_dim x state_size, per layer."""
        return self.heads * self.head_dim * self.state_size


class Shape(_Frozen):
    """The parts of a model's config.json that set how much memory serving it takes besides its weights."""

    architecture: str
    dtype: str
    attention_layers: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    mamba: Mamba | None = None
    draft_attention_layers: int = Field(0, ge=0, description="attention layers of the built-in MTP draft, if any")

    @classmethod
    def of(cls, config: dict[str, Any]) -> Shape:
        """From a config.json: a dense model's (Llama and the like), or a NemotronH hybrid's (its layer pattern)."""
        # A vision-language model keeps its language model's values apart
        text = config.get("text_config") or config.get("llm_config") or config
        pattern = text.get("hybrid_override_pattern", "")
        heads = text["num_attention_heads"]
        mamba = None
        if MAMBA in pattern:
            mamba = Mamba(
                layers=pattern.count(MAMBA),
                heads=text["mamba_num_heads"],
                head_dim=text["mamba_head_dim"],
                state_size=text["ssm_state_size"],
                groups=text["n_groups"],
                conv_kernel=text["conv_kernel"],
            )
        return cls(
            architecture=config["architectures"][0],
            dtype=str(text.get("torch_dtype") or config.get("torch_dtype", "bfloat16")),
            attention_layers=pattern.count(ATTENTION) if pattern else text["num_hidden_layers"],
            kv_heads=text.get("num_key_value_heads") or heads,
            head_dim=text.get("head_dim") or text["hidden_size"] // heads,
            mamba=mamba,
            draft_attention_layers=text.get("mtp_hybrid_override_pattern", "").count(ATTENTION),
        )


class Card(_Frozen):
    """A model as recipes/models/ keeps it: the checkpoint's size on disk, its config.json's memory-setting values,
    and where they were read."""

    id: str
    checkpoint_bytes: int = Field(ge=0, description="every weight file of the checkpoint: what the GPU holds")
    estimated: bool = Field(False, description="size and values from related checkpoints, not this one's files")
    quantization: str = "none"
    config: dict[str, Any] = Field(description="config.json's values, as published; a GENERATED name for a tiny model")
    sources: list[str] = Field(min_length=1)

    @property
    def shape(self) -> Shape:
        return Shape.of(self.config)


def _config(data: dict[str, Any], raw: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A card's config.json values: its own, the generator's (a GENERATED name), or another card's (`config_of`, the
    same model in another precision)."""
    if "config_of" in data:
        return _config(raw[data["config_of"]], raw)
    return GENERATED.get(data["config"], data["config"]) if isinstance(data["config"], str) else data["config"]


@cache
def cards() -> dict[str, Card]:
    """Every model card in recipes/models/, by model id."""
    raw = {data["id"]: data for data in (yaml.safe_load(path.read_text()) for path in sorted(MODELS.glob("*.yml")))}
    return {
        model_id: Card.model_validate(
            {k: v for k, v in data.items() if k != "config_of"} | {"config": _config(data, raw)}
        )
        for model_id, data in raw.items()
    }


def card(model_id: str) -> Card:
    try:
        return cards()[model_id]
    except KeyError:
        raise StationError(
            f"station knows no shape for the model {model_id}",
            f"add recipes/models/<name>.yml with its checkpoint's size and its config.json's values "
            f"(see {sorted(MODELS.glob('*.yml'))[0].name} there)",
        ) from None
