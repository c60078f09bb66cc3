"""`check-recipe` without a host: recipes through the pinned vLLM's own parser on the controller, where its parser is a
CPU build of the same vLLM release. Every shipped ladder and search space parses; a misspelt flag or an unknown parser
is named with the nearest valid spelling; a release with no parser here is sent to its host. No deployment and no
host's lock: these run beside either deployment's tests."""

from __future__ import annotations

import itertools

import pytest
import yaml
from rich.console import Console

from station import paths
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


def _refused(path, *expected: str) -> None:
    run = invoke("check-recipe", "--recipe", str(path))
    assert run.returncode == 1 and "Traceback" not in run.output, run.output
    for text in expected:
        assert text in run.output, run.output


def test_a_misspelt_flag_of_a_ladder_step_is_named_with_its_nearest_spelling(tmp_path) -> None:
    ladder = yaml.safe_load((paths.RECIPES / "cpu-ladder.yml").read_text())
    ladder["steps"][3]["args"] = {"async-schedulng": True}
    (path := tmp_path / "ladder.yml").write_text(yaml.safe_dump(ladder))
    _refused(
        path,
        "rejected  step 3 (async scheduling): --async-schedulng: unrecognized argument",
        "nearest valid spelling: --async-scheduling",
    )


def test_a_tool_parser_this_vllm_lacks_is_named_with_its_nearest_spelling(tmp_path) -> None:
    path = tmp_path / "typo.yml"
    path.write_text(yaml.safe_dump({"extends": "cpu-smoke", "engine": {"args": {"tool-call-parser": "hermess"}}}))
    _refused(
        path,
        "--tool-call-parser: 'hermess' is not one of this vLLM's tool-call-parsers",
        "nearest valid spelling: hermes",
    )
