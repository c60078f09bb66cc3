"""Generate the tiny models the CPU engine serves: a Llama, and a vision-language model built on it (config,
tokenizer and image processor; no weights).

No model hub is reachable from development machines or CI, so the CPU recipe
serves this model with `--load-format dummy`: random weights, real vLLM. The
tokenizer is a byte-level BPE trained on the docstrings of Python's builtins,
which makes the output the same for the same Python release.

It chats like the models agents use: a chat template in the Hermes/Qwen
format (system prompt, tool schemas in <tools>, calls in <tool_call>, results
in <tool_response>), which vLLM's built-in `hermes` tool parser reads. Random
weights cannot choose a tool; a named tool_choice still returns schema-valid
arguments, because vLLM's structured outputs constrain them.

The vision-language model (`--vision`) is that Llama behind a tiny Idefics3 vision encoder: 64-pixel tiles of
16-pixel patches, four image tokens a tile. An architecture whose processing needs no torchvision, which the CPU
image leaves out (its PyPI builds break beside torch +cpu). A screenshot is resized to one tile, so any image costs
the same few tokens; enough to carry an image through the API, the processor and the encoder.

Runs inside the engine image while it is built (docker/vllm-cpu/Dockerfile):

    python tiny_model.py /opt/station/models/tiny-llama
    python tiny_model.py --vision /opt/station/models/tiny-vision
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
    "max_position_embeddings": 32768,  # long enough for an agent's system prompt and tools (Cline: ~10k tokens)
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "hidden_act": "silu",
    "tie_word_embeddings": True,
    "bos_token_id": 0,
    "eos_token_id": 1,
    "torch_dtype": "float32",
}
SPECIAL_TOKENS = ["<s>", "</s>", "<|im_start|>", "<|im_end|>"]
# Plain added tokens, as in Qwen's and Hermes' tokenizers: kept in decoded text,
# where the tool parser looks for them.
TOOL_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

# Idefics3's image tokens; the processor writes each image as <fake_token_around_image><global-img><image>... .
IMAGE_TOKENS = ["<image>", "<fake_token_around_image>", "<global-img>", "<end_of_utterance>"]
TILE, PATCH, SCALE = 64, 16, 2  # pixels a tile, pixels a patch, patches merged per image token along each side
# config.json of the vision-language model, less image_token_id: the tokenizer assigns it (write_vision)
VISION_CONFIG = {
    "architectures": ["Idefics3ForConditionalGeneration"],
    "model_type": "idefics3",
    "scale_factor": SCALE,
    "text_config": {
        **{key: value for key, value in CONFIG.items() if key != "architectures"},
        "pad_token_id": CONFIG["eos_token_id"],
    },
    "vision_config": {
        "model_type": "idefics3_vision",
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "image_size": TILE,
        "patch_size": PATCH,
        "hidden_act": "gelu_pytorch_tanh",
        "layer_norm_eps": 1e-6,
    },
    "vocab_size": CONFIG["vocab_size"],
    "tie_word_embeddings": True,
    "torch_dtype": "float32",
}
IMAGE_PROCESSOR = {
    "image_processor_type": "Idefics3ImageProcessor",
    "processor_class": "Idefics3Processor",
    "do_convert_rgb": True,
    "do_resize": True,
    "size": {"longest_edge": TILE},
    "max_image_size": {"longest_edge": TILE},
    "do_image_splitting": False,
    "do_rescale": True,
    "rescale_factor": 1 / 255,
    "do_normalize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "do_pad": True,
    "resample": 1,
}
IMAGE_SEQ_LEN = (TILE // PATCH // SCALE) ** 2  # image tokens a tile

CHAT_TEMPLATE = """\
{%- if tools %}
<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{% for tool in tools %}
{{ tool | tojson }}
{% endfor %}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% elif messages[0].role == 'system' %}
<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'assistant' and not message.tool_calls) %}
<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% elif message.role == 'assistant' %}
<|im_start|>assistant
{% if message.content %}{{ message.content }}
{% endif %}
{%- for call in message.tool_calls %}
{%- set call = call.function if call.function is defined else call %}
<tool_call>
{"name": "{{ call.name }}", "arguments": {{ call.arguments if call.arguments is string else call.arguments | tojson }}}
</tool_call>
{% endfor %}<|im_end|>
{% elif message.role == 'tool' %}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}<|im_start|>user
{% endif %}<tool_response>
{{ message.content }}
</tool_response>
{% if loop.last or messages[loop.index0 + 1].role != 'tool' %}<|im_end|>
{% endif %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""


def corpus() -> Iterator[str]:
    """Built-in text: the docstrings of Python's builtins, in a fixed order."""
    for name in sorted(dir(builtins)):
        doc = getattr(getattr(builtins, name), "__doc__", None)
        if doc:
            yield doc


def train_tokenizer(vocab_size: int):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

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
    tokenizer.add_tokens([AddedToken(token, special=False, normalized=False) for token in TOOL_TOKENS])
    return tokenizer


def write(out: Path) -> None:
    """The Llama: tokenizer, its chat template, config.json."""
    _write(out, CONFIG, train_tokenizer(CONFIG["vocab_size"] - len(TOOL_TOKENS)))


def write_vision(out: Path) -> None:
    """The vision-language model: the Llama's tokenizer with Idefics3's image tokens after its trained ones, its
    config, and the image processor's."""
    from tokenizers import AddedToken

    tokenizer = train_tokenizer(CONFIG["vocab_size"] - len(TOOL_TOKENS) - len(IMAGE_TOKENS))
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in IMAGE_TOKENS])
    image_token_id = tokenizer.token_to_id(IMAGE_TOKENS[0])
    if image_token_id >= VISION_CONFIG["vocab_size"]:
        raise SystemExit(f"the image token falls outside the vocabulary of {VISION_CONFIG['vocab_size']}")
    _write(out, {**VISION_CONFIG, "image_token_id": image_token_id}, tokenizer)
    (out / "preprocessor_config.json").write_text(json.dumps(IMAGE_PROCESSOR, indent=2) + "\n")
    processor = {"processor_class": "Idefics3Processor", "image_seq_len": IMAGE_SEQ_LEN}
    (out / "processor_config.json").write_text(json.dumps(processor, indent=2) + "\n")


def _write(out: Path, config: dict, tokenizer) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(out / "tokenizer.json"))
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": SPECIAL_TOKENS[0],
        "eos_token": SPECIAL_TOKENS[1],
        "model_max_length": CONFIG["max_position_embeddings"],
        "chat_template": CHAT_TEMPLATE,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2) + "\n")
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")


if __name__ == "__main__":
    arguments = sys.argv[1:]
    vision = arguments[:1] == ["--vision"]
    if len(arguments) != 1 + vision:
        sys.exit("usage: tiny_model.py [--vision] OUTPUT_DIR")
    (write_vision if vision else write)(Path(arguments[-1]))
