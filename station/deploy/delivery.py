"""Images for a host: built on the controller where the host cannot pull them, for the host's architecture only,
and delivered to a remote host in the offline bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from station.deploy import bundle, images, inventory, platforms
from station.recipes.recipe import Recipe


def images_to_build(recipe: Recipe, host_vars: dict[str, Any]) -> dict[str, tuple[str, dict[str, str]]]:
    """Image tag → (docker/ folder, build arguments), for the images station builds for this host."""
    built = host_vars.get("station_built_images", {}) | host_vars.get("station_offline_images", {})
    builds = {tag: (folder, {}) for folder, tag in built.items()}
    if recipe.engine.build:
        builds[recipe.engine.image] = (recipe.engine.build, dict(recipe.engine.build_args))
    return builds


def ensure_images(host: str, recipe: Recipe, console: Console, architecture: str | None = None) -> list[str]:
    """Build, on the controller, the images this host cannot pull; returns their tags. For a host of another
    `architecture` than the controller's (None: the host is this machine), refused before any build."""
    builds = images_to_build(recipe, inventory.host_vars(host))
    if builds:
        engine = images.client()
        if architecture:
            platforms.require_buildable(host, architecture, platforms.of_engine(engine))
        for tag, (folder, build_args) in builds.items():
            images.ensure(engine, tag, folder, console, build_args)
    return list(builds)


def prepare_images(host: str, recipe: Recipe, console: Console) -> dict[str, Any]:
    """Images for the deploy: a remote host gets them in the offline bundle, whose path is returned as vars."""
    if inventory.is_local(host):
        ensure_images(host, recipe, console)  # the host's Docker engine is this one
        return {}
    if not images_to_build(recipe, inventory.host_vars(host)):
        return {}  # the host pulls every image
    return {"offline_bundle_dir": str(build_bundle(host, recipe, console))}


def build_bundle(host: str, recipe: Recipe, console: Console) -> Path:
    """The offline bundle for what this host needs to serve this recipe, for the host's architecture."""
    architecture = platforms.of_host(host, console)
    tags = ensure_images(host, recipe, console, architecture)
    return bundle.build(images.client(), tags, architecture, console)
