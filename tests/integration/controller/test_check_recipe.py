"""`check-recipe` without a host: recipes through the pinned vLLM's own parser on the controller, where its parser is a
CPU build of the same vLLM release. Every shipped ladder and search space parses; a misspelt flag or an unknown parser
is named with the nearest valid spelling; a release with no parser here is sent to its host. No deployment and no
host's lock: these run beside either deployment's tests."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from station import paths
from station.deploy import argcheck
from station.recipes import recipe
from station.tune import space as spaces
from tests.integration.conftest import Invocation, invoke, succeeded

SHIPPED_LADDERS = [name for name in recipe.available() if name.startswith("nemotron-")]
# vLLM releases whose parser this controller holds (a CPU build of the same release); others are checked on the host.
CHECKABLE_HERE = [name for name in SHIPPED_LADDERS if argcheck.release(recipe.load(name)) in argcheck.PARSER_IMAGES]


@pytest.fixture(scope="module")
def shipped_ladders_checked() -> Invocation:
    """One check-recipe of every shipped ladder this controller holds the parser of: one run of that parser for all."""
    return succeeded(invoke("check-recipe", "--recipe", ",".join(CHECKABLE_HERE)))


@pytest.mark.parametrize("name", CHECKABLE_HERE)
def test_every_nemotron_step_parses_with_the_pinned_vllm_parser(name: str, shipped_ladders_checked) -> None:
    run = shipped_ladders_checked
    steps = len(recipe.load_ladder(name).steps)
    named = f"{name} " if len(CHECKABLE_HERE) > 1 else ""  # one recipe's steps are not labelled with its name
    assert run.output.count(f"  ok  {named}step ") == steps, run.output
    assert "accepts every argument" in run.output


@pytest.mark.parametrize("name", sorted(set(SHIPPED_LADDERS) - set(CHECKABLE_HERE)))
def test_a_ladder_of_a_release_with_no_parser_here_is_sent_to_its_host(name: str) -> None:
    refused = invoke("check-recipe", "--recipe", name)
    assert refused.returncode == 1, refused.output
    assert f"no local image holds the parser of vLLM {recipe.load(name).engine.vllm_version}" in refused.output
    assert "invoke check-recipe --host H" in refused.output and "Traceback" not in refused.output


SHIPPED_SPACES = [("cpu-agentic", "cpu-smoke"), ("gpu-agentic", "nemotron-3.5-super-vl-gb300")]


@pytest.fixture(scope="module")
def shipped_spaces_checked() -> list[argcheck.Verdict]:
    """Every configuration of every shipped search space, on its base recipe, through one check."""
    labelled = []
    for space_name, base in SHIPPED_SPACES:
        searched = spaces.load(space_name)
        names = list(searched.flags)
        grid = itertools.product(*(searched.flags[name].choices for name in names))
        labelled += [
            (f"{space_name} {index}", spaces.candidate(recipe.load(base), dict(zip(names, values, strict=True)), "c"))
            for index, values in enumerate(grid)
        ]
    return [verdict for _, verdicts in argcheck.check(labelled, Console(quiet=True)) for verdict in verdicts]


@pytest.mark.parametrize(("space_name", "base"), SHIPPED_SPACES)
def test_every_configuration_of_a_shipped_space_parses_with_the_pinned_vllm(
    space_name, base, shipped_spaces_checked
) -> None:
    mine = [verdict for verdict in shipped_spaces_checked if verdict.label.startswith(f"{space_name} ")]
    assert len(mine) == spaces.load(space_name).size
    assert [verdict.describe() for verdict in mine if not verdict.ok] == []


@pytest.fixture(scope="module")
def broken_recipes_checked(tmp_path_factory) -> tuple[Invocation, Path, Path]:
    """One check-recipe of two broken files: a ladder step with a misspelt flag, a recipe with a tool parser this
    vLLM lacks."""
    folder = tmp_path_factory.mktemp("broken")
    ladder = yaml.safe_load((paths.RECIPES / "cpu-ladder.yml").read_text())
    ladder["steps"][3]["args"] = {"async-schedulng": True}
    (misspelt := folder / "ladder.yml").write_text(yaml.safe_dump(ladder))
    typo = folder / "typo.yml"
    typo.write_text(yaml.safe_dump({"extends": "cpu-smoke", "engine": {"args": {"tool-call-parser": "hermess"}}}))
    run = invoke("check-recipe", "--recipe", f"{misspelt},{typo}")
    assert run.returncode == 1 and "Traceback" not in run.output, run.output
    return run, misspelt, typo


def test_a_misspelt_flag_of_a_ladder_step_is_named_with_its_nearest_spelling(broken_recipes_checked) -> None:
    run, misspelt, _ = broken_recipes_checked
    for text in (
        f"rejected  {misspelt} step 3 (async scheduling): --async-schedulng: unrecognized argument",
        "nearest valid spelling: --async-scheduling",
    ):
        assert text in run.output, run.output
    # each step adds its switches to the steps before it: from step 3 on, every step carries the misspelt flag
    assert run.output.count(f"  ok  {misspelt} step ") == 3, run.output
    assert run.output.count(f"  rejected  {misspelt} step ") == len(recipe.load_ladder(str(misspelt)).steps) - 3, (
        run.output
    )


def test_a_tool_parser_this_vllm_lacks_is_named_with_its_nearest_spelling(broken_recipes_checked) -> None:
    run, _, typo = broken_recipes_checked
    for text in (
        f"rejected  {typo}: --tool-call-parser: 'hermess' is not one of this vLLM's tool-call-parsers",
        "nearest valid spelling: hermes",
    ):
        assert text in run.output, run.output
