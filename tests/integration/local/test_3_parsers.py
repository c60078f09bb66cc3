"""Every shipped ladder and search space through the pinned vLLM's own parser on the controller (check-recipe's
path), where its parser is: a CPU build of the same vLLM release. A release with no parser here is sent to its host."""

from __future__ import annotations

import itertools

import pytest
from rich.console import Console

from station.deploy import argcheck
from station.recipes import recipe
from station.tune import space as spaces
from tests.integration.conftest import invoke, succeeded

SHIPPED_LADDERS = [name for name in recipe.available() if name.startswith("nemotron-")]
# vLLM releases whose parser this controller holds (a CPU build of the same release); others are checked on the host.
CHECKABLE_HERE = [name for name in SHIPPED_LADDERS if argcheck.release(recipe.load(name)) in argcheck.PARSER_IMAGES]


@pytest.mark.parametrize("name", CHECKABLE_HERE)
def test_every_nemotron_step_parses_with_the_pinned_vllm_parser(name: str) -> None:
    run = succeeded(invoke("check-recipe", "--recipe", name))
    steps = len(recipe.load_ladder(name).steps)
    assert run.output.count("  ok  step ") == steps, run.output
    assert "accepts every argument" in run.output


@pytest.mark.parametrize("name", sorted(set(SHIPPED_LADDERS) - set(CHECKABLE_HERE)))
def test_a_ladder_of_a_release_with_no_parser_here_is_sent_to_its_host(name: str) -> None:
    refused = invoke("check-recipe", "--recipe", name)
    assert refused.returncode == 1, refused.output
    assert f"no local image holds the parser of vLLM {recipe.load(name).engine.vllm_version}" in refused.output
    assert "invoke check-recipe --host H" in refused.output and "Traceback" not in refused.output


@pytest.mark.parametrize(
    ("space_name", "base"), [("cpu-agentic", "cpu-smoke"), ("gpu-agentic", "nemotron-3.5-super-vl-gb300")]
)
def test_every_configuration_of_a_shipped_space_parses_with_the_pinned_vllm(space_name, base) -> None:
    searched = spaces.load(space_name)
    names = list(searched.flags)
    grid = itertools.product(*(searched.flags[name].choices for name in names))
    labelled = [
        (f"{space_name} {index}", spaces.candidate(recipe.load(base), dict(zip(names, values, strict=True)), "c"))
        for index, values in enumerate(grid)
    ]
    _, verdicts = argcheck.check(labelled, Console(quiet=True))
    assert [v.describe() for v in verdicts if not v.ok] == []
