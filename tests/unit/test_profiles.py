"""Traffic profiles: validated field by field, and checked against the recipe's context before anything runs."""

from __future__ import annotations

import pytest
import yaml

from station import profiles, recipe
from station.errors import StationError


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
