"""The generated tiny model the CPU engine serves."""

from __future__ import annotations

import json

from tokenizers import Tokenizer

from station.generators import tiny_model


def test_model_directory_is_a_llama_vllm_can_serve(tmp_path) -> None:
    tiny_model.write(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["hidden_size"] // config["num_attention_heads"] == 64  # CPU attention rejects 16
    assert config["max_position_embeddings"] >= 512 + 512
    tokenizer = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert 256 < tokenizer.get_vocab_size() <= config["vocab_size"]
    assert tokenizer.decode(tokenizer.encode("hello world").ids) == "hello world"


def test_generation_is_reproducible(tmp_path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    tiny_model.write(first)
    tiny_model.write(second)
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        assert (first / name).read_bytes() == (second / name).read_bytes()
