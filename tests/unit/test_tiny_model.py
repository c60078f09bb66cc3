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


def test_the_vision_model_is_the_llama_behind_an_idefics3_encoder_with_its_image_token(tmp_path) -> None:
    tiny_model.write_vision(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["architectures"] == ["Idefics3ForConditionalGeneration"]
    text = config["text_config"]
    assert text["hidden_size"] // text["num_attention_heads"] == 64
    tokenizer = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert tokenizer.token_to_id("<image>") == config["image_token_id"] < config["vocab_size"]
    assert all(tokenizer.token_to_id(token) is not None for token in tiny_model.IMAGE_TOKENS)
    processor = json.loads((tmp_path / "processor_config.json").read_text())
    vision = config["vision_config"]
    patches = vision["image_size"] // vision["patch_size"]
    assert processor["image_seq_len"] == (patches // config["scale_factor"]) ** 2  # what the encoder emits a tile
    image_processor = json.loads((tmp_path / "preprocessor_config.json").read_text())
    assert image_processor["max_image_size"]["longest_edge"] == vision["image_size"]  # a screenshot is one tile


def test_vision_generation_is_reproducible(tmp_path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    tiny_model.write_vision(first)
    tiny_model.write_vision(second)
    assert sorted(p.name for p in first.iterdir()) == sorted(p.name for p in second.iterdir())
    for path in first.iterdir():
        assert path.read_bytes() == (second / path.name).read_bytes()
