"""Recipe flags checked by the pinned vLLM's own argument parser, on the controller.

The same script (ansible/roles/vllm_server/files/check_vllm_args.py) runs on a
host inside the pinned engine image before every deploy. Here it runs in a
local image of the same vLLM release, so a recipe can be checked before any
host is involved: the GPU build's parser and the CPU build's are the same source.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import docker
from rich.console import Console

from station import paths
from station.deploy import images
from station.errors import StationError
from station.recipes import render
from station.recipes.recipe import Recipe

SCRIPT = paths.ANSIBLE / "roles" / "vllm_server" / "files" / "check_vllm_args.py"

MAX_ARGUMENT_BYTES = 100_000
# vLLM release (major.minor) → a locally buildable image holding its parser.
PARSER_IMAGES = {"0.32": ("station.invalid/vllm-cpu:0.32.0", "vllm-cpu")}


@dataclass(frozen=True)
class Verdict:
    label: str
    ok: bool
    flag: str | None = None
    error: str | None = None
    suggestion: str | None = None

    def describe(self) -> str:
        if self.ok:
            return self.label
        flag = f"{self.flag}: " if self.flag else ""
        near = f"; nearest valid spelling: {self.suggestion}" if self.suggestion else ""
        return f"{self.label}: {flag}{self.error}{near}"


def release(recipe: Recipe) -> str:
    """The vLLM release (major.minor) a recipe pins."""
    return ".".join(recipe.engine.vllm_version.split(".")[:2])


def parser_image(engine: docker.DockerClient, recipe: Recipe, console: Console) -> str:
    """The recipe's own image when it is here; else a local build of the same vLLM release."""
    if images.image_id(engine, recipe.engine.image):
        return recipe.engine.image
    if release(recipe) not in PARSER_IMAGES:
        raise StationError(
            f"no local image holds the parser of vLLM {recipe.engine.vllm_version}",
            f"check it on the host: invoke check-recipe --host H (checkable here: {', '.join(PARSER_IMAGES)})",
        )
    tag, folder = PARSER_IMAGES[release(recipe)]
    images.ensure(engine, tag, folder, console)
    return tag


def check(labelled: list[tuple[str, Recipe]], console: Console) -> list[tuple[str, list[Verdict]]]:
    """Parse every recipe's argv, one container run per parser image (one per vLLM release); returns each parser
    image used with the verdicts on the recipes it parsed, in their order."""
    engine = images.client()
    parsers: dict[tuple[str, str], str] = {}  # (the recipe's image, its release) → the parser image
    groups: dict[str, list[tuple[str, Recipe]]] = {}
    for label, recipe in labelled:
        pinned = (recipe.engine.image, release(recipe))
        if pinned not in parsers:
            parsers[pinned] = parser_image(engine, recipe, console)
        groups.setdefault(parsers[pinned], []).append((label, recipe))
    return [(image, _parse(engine, image, group, console)) for image, group in groups.items()]


def _parse(
    engine: docker.DockerClient, image: str, labelled: list[tuple[str, Recipe]], console: Console
) -> list[Verdict]:
    checks = [{"label": label, "argv": render.serve_argv(recipe)} for label, recipe in labelled]
    verdicts = []
    with console.status(f"Parsing {len(checks)} argument list(s) with vLLM in {image}"):
        for batch in batches(checks):
            output = _run_script(engine, image, json.dumps(batch))
            parsed = [Verdict(**json.loads(line)) for line in output.splitlines() if line.startswith("{")]
            if len(parsed) != len(batch):
                raise StationError(f"vLLM's parser in {image} did not run:\n{output[-2000:]}", "see its output above")
            verdicts += parsed
    return verdicts


def batches(checks: list[dict], limit: int = MAX_ARGUMENT_BYTES) -> list[list[dict]]:
    """The checks in groups whose JSON fits one command-line argument (Linux refuses one above 128 KiB)."""
    grouped: list[list[dict]] = [[]]
    for check in checks:
        if grouped[-1] and len(json.dumps([*grouped[-1], check])) > limit:
            grouped.append([])
        grouped[-1].append(check)
    return grouped


def _run_script(engine: docker.DockerClient, image: str, checks: str) -> str:
    """The script's output (it exits 3 when a list does not parse: its verdicts say which)."""
    container = engine.containers.run(
        image, entrypoint=["python3", "-c", SCRIPT.read_text()], command=[checks], network_mode="none", detach=True
    )
    try:
        container.wait(timeout=600)
        return container.logs(stdout=True, stderr=True).decode(errors="replace")
    finally:
        container.remove(force=True)


def require_valid(checked: list[tuple[str, list[Verdict]]]) -> None:
    rejected = [(image, verdict) for image, verdicts in checked for verdict in verdicts if not verdict.ok]
    if rejected:
        lines = "\n".join(f"  - {verdict.describe()} (vLLM in {image})" for image, verdict in rejected)
        raise StationError(f"vLLM rejects the recipe's arguments:\n{lines}", "fix engine.args in the recipe")
