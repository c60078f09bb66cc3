"""Traffic profiles: validated field by field, and checked against the recipe's context before anything runs."""

from __future__ import annotations

import pytest
import yaml

from station.bench.traffic import Lengths, Provenance, TrafficProfile
from station.errors import StationError
from station.recipes import profiles, recipe


@pytest.fixture
def agentic_data() -> dict:
    return yaml.safe_load((profiles.PROFILES / "agentic-cpu.yml").read_text())


def write(tmp_path, data: dict) -> str:
    path = tmp_path / "profile.yml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.mark.parametrize("name", [name for name in profiles.available() if name != profiles.RANDOM])
def test_every_shipped_profile_is_valid(name: str) -> None:
    assert profiles.load(name).name == name


def test_the_cpu_profile_fits_the_cpu_recipe() -> None:
    profiles.load("agentic-cpu").require_fits(recipe.load("cpu-smoke"))


def test_the_gpu_profile_fits_the_gb300_recipe_and_has_the_published_target() -> None:
    agentic = profiles.load("agentic")
    agentic.require_fits(recipe.load("nemotron-3.5-super-vl-gb300"))
    assert (agentic.sessions, agentic.turns, agentic.per_user_target_tok_s) == (32, 20, 50)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("sessions", 0, "sessions: Input should be greater than 0"),
        ("turns", 1, "turns: Input should be greater than or equal to 2"),
        ("output_tokens", -5, "output_tokens: Input should be greater than 0"),
        ("kind", "replay", "kind: Input should be 'agentic'"),
        ("shared_prefix_tokens", 10, "shared_prefix_tokens is below turn_input_tokens"),
        ("think_time", 5, "think_time: Extra inputs are not permitted"),
    ],
)
def test_bad_fields_are_named(tmp_path, agentic_data, field, value, message) -> None:
    agentic_data[field] = value
    with pytest.raises(StationError) as error:
        profiles.load(write(tmp_path, agentic_data))
    assert message in error.value.problem


def test_a_profile_longer_than_the_context_is_refused(tmp_path, agentic_data) -> None:
    agentic_data["turns"] = 300
    with pytest.raises(StationError) as error:
        profiles.load(write(tmp_path, agentic_data)).require_fits(recipe.load("cpu-smoke"))
    assert "its last turn needs 39424 tokens" in error.value.problem
    assert "above cpu-smoke's max-model-len 32768" in error.value.problem


def test_unknown_profiles_list_the_available_ones() -> None:
    with pytest.raises(StationError) as error:
        profiles.load("chatty")
    assert "agentic-cpu" in error.value.hint and "random" in error.value.hint


def test_template_syntax_in_a_profile_is_refused(tmp_path, agentic_data) -> None:
    agentic_data["description"] = "{{ lookup('env', 'HOME') }}"
    with pytest.raises(StationError, match="holds template syntax"):
        profiles.load(write(tmp_path, agentic_data))


@pytest.mark.parametrize("name", recipe.available())
def test_every_shipped_recipe_names_a_profile_that_exists(name: str) -> None:
    chosen = recipe.load(name).profile
    assert chosen == profiles.RANDOM or profiles.load(chosen).name == chosen


def traffic_of(shape: profiles.AgenticProfile, hit_rate: float | None, busy: float | None) -> TrafficProfile:
    """What capture would read from an engine serving `shape` ideally: every turn's history cached, only its new
    input computed (a stand-in for a capture; test_3_traffic captures real traffic)."""
    prompts = [
        shape.shared_prefix_tokens + turn * shape.turn_input_tokens + (turn - 1) * shape.output_tokens
        for turn in range(1, shape.turns + 1)
    ]
    mean = sum(prompts) / len(prompts)
    return TrafficProfile(
        provenance=Provenance(host="DGX_01", window="1h", captured_at="2026-11-30T04:00:00+00:00", recipe="r",
                              config_hash="c", vllm_version="0.32.0"),
        requests=shape.sessions * shape.turns,
        requests_per_s=1.0,
        concurrency_mean=shape.sessions / 3,
        in_flight_p90=busy,
        prompt_tokens=Lengths(mean=mean, p50=mean, p90=max(prompts), p99=max(prompts)),
        generation_tokens=Lengths(mean=shape.output_tokens, p50=shape.output_tokens, p90=shape.output_tokens,
                                  p99=shape.output_tokens),
        prefix_cache_hit_rate=hit_rate,
        chat_share=1.0,
    )  # fmt: skip


def test_captured_traffic_is_replayed_with_the_lengths_and_load_it_had() -> None:
    shape = profiles.load("agentic-cpu")
    mean_prompt = traffic_of(shape, 0, 8).prompt_tokens.mean
    captured = traffic_of(shape, 1 - shape.turn_input_tokens / mean_prompt, busy=8)
    replay = profiles.replaying(captured, shape)
    assert (replay.sessions, replay.turns) == (8, shape.turns)
    assert (replay.shared_prefix_tokens, replay.turn_input_tokens, replay.output_tokens) == (1024, 96, 32)
    assert replay.think_time_ms == shape.think_time_ms and replay.name == "dgx-01-traffic"
    assert "captured on DGX_01 over 1h" in replay.description and "in agentic-cpu's sessions" in replay.description


def test_traffic_the_cache_missed_keeps_a_prefix_at_least_as_long_as_each_turn() -> None:
    shape = profiles.load("agentic-cpu")
    for hit_rate in (0.0, None):
        replay = profiles.replaying(traffic_of(shape, hit_rate, busy=None), shape)
        assert replay.shared_prefix_tokens >= replay.turn_input_tokens  # AgenticProfile's own rule holds
        assert replay.sessions == round(8 / 3)  # no p90 in older captures: the mean load
        prompts = [replay.shared_prefix_tokens + t * replay.turn_input_tokens + (t - 1) * 32 for t in (1, 2, 3)]
        assert sum(prompts) / 3 == pytest.approx(traffic_of(shape, 0, None).prompt_tokens.mean, abs=2)


def test_prompts_too_short_for_the_sessions_are_refused_with_what_to_do() -> None:
    shape = profiles.load("agentic-cpu").model_copy(update={"turns": 100})
    with pytest.raises(StationError, match="too few for 100-turn sessions") as refused:
        profiles.replaying(traffic_of(profiles.load("agentic-cpu"), 0.9, busy=4), shape)
    assert "fewer turns" in refused.value.hint
