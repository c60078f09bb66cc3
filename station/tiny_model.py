"""Generate a tiny Llama model directory (config + tokenizer, no weights) for the CPU engine.

No model hub is reachable from development machines or CI, so the CPU recipe
serves this model with `--load-format dummy`: random weights, real vLLM. The
tokenizer is a byte-level BPE trained on the docstrings of Python's builtins,
which makes the output the same for the same Python release.

Runs inside the engine image while it is built (docker/vllm-cpu/Dockerfile):

    python tiny_model.py /opt/station/models/tiny-llama
"""

from __future__ import annotations

import builtins
import json
import sys
from collections.abc import Iterator
from pathlib import Path

# head_dim = hidden / heads = 64: the CPU attention backend rejects 16.
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "num_hidden_layers": 2,
    "vocab_size": 4096,
    "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "hidden_act": "silu",
    "tie_word_embeddings": True,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "torch_dtype": "float32",
}
SPECIAL_TOKENS = ["<s>", "</s>"]


def corpus() -> Iterator[str]:
    """Built-in text: the docstrings of Python's builtins, in a fixed order."""
    for name in sorted(dir(builtins)):
        doc = getattr(getattr(builtins, name), "__doc__", None)
        if doc:
            yield doc


def train_tokenizer(vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(), trainer)
    return tokenizer


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(CONFIG["vocab_size"])
    tokenizer.save(str(out / "tokenizer.json"))
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": SPECIAL_TOKENS[0],
        "eos_token": SPECIAL_TOKENS[1],
        "model_max_length": CONFIG["max_position_embeddings"],
    }
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2) + "\n")
    (out / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tiny_model.py OUTPUT_DIR")
    write(Path(sys.argv[1]))
