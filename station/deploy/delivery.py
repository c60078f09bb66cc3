"""Images for a host that it cannot pull: built with its own Docker engine where it builds its images
(station_image_builds: host, reached through an SSH-forwarded socket), else built on the controller, for the host's
architecture only, and delivered in the offline bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from station.deploy import bundle, images, inventory, platforms, tunnel
from station.errors import StationError
from station.recipes.recipe import Recipe

Builds = images.Builds

# Where a remote host's images are built (its inventory's station_image_builds)
WHERE = ("host", "controller")


def images_to_build(recipe: Recipe, host_vars: dict[str, Any]) -> Builds:
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
        images.ensure_all(engine, builds, console)
    return list(builds)


def prepare_images(host: str, recipe: Recipe, console: Console) -> dict[str, Any]:
    """Images for the deploy: a remote host builds them itself or gets them in the offline bundle, whose path is
    returned as vars."""
    if inventory.is_local(host):
        ensure_images(host, recipe, console)  # the host's Docker engine is this one
        return {}
    host_vars = inventory.host_vars(host)
    builds = images_to_build(recipe, host_vars)
    if not builds:
        return {}  # the host pulls every image
    if builds_on(host, host_vars) == "host":
        build_on_host(host, builds, console)
        return {}
    return {"offline_bundle_dir": str(build_bundle(host, recipe, console))}


def builds_on(host: str, host_vars: dict[str, Any]) -> str:
    """Where the host's images are built: `host` (its own Docker engine) or `controller` (the offline bundle)."""
    where = host_vars.get("station_image_builds", "controller")
    if where not in WHERE:
        raise StationError(
            f"{host}'s station_image_builds is {where!r}",
            "set it to host (the host builds its images itself, from the context station sends) or controller "
            "(built here and sent in the offline bundle); nothing was changed",
        )
    return where


def build_on_host(host: str, builds: Builds, console: Console) -> None:
    """Each image built by the host's own Docker engine: the same build context and inputs digest as a controller
    build (a second deploy reuses it), the progress and the log here, the build cache there (an interrupted build
    resumes from it). The host makes its own Debian base and gets the pinned wheels of its architecture, so this
    controller's architecture does not matter; an image whose lock pins no wheels for the host's is refused before
    any build."""
    with tunnel.docker_socket(host, console) as url:
        engine = images.host_client(host, url)
        images.require_wheels_for(sorted({folder for folder, _ in builds.values()}), platforms.of_engine(engine))
        for tag, (folder, build_args) in builds.items():
            images.ensure(engine, tag, folder, console, build_args, host)


def build_bundle(host: str, recipe: Recipe, console: Console) -> Path:
    """The offline bundle for what this host needs to serve this recipe, for the host's architecture."""
    architecture = platforms.of_host(host, console)
    tags = ensure_images(host, recipe, console, architecture)
    return bundle.build(images.client(), tags, architecture, console)
