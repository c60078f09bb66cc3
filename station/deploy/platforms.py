"""CPU architectures of the controller, a host and an image, in one spelling (x86_64, aarch64).

The controller builds the images of an offline host's bundle for its own
architecture only: `require_buildable` stops a deploy or a bundle for a host of
another one before anything is built, with the ways out; `require_image_for`
refuses an image of the wrong platform before it is saved for a host.
"""

from __future__ import annotations

from typing import Any

import docker
from rich.console import Console

from station.deploy import playbook
from station.errors import StationError

# Docker and OCI say amd64 and arm64 where the kernel (and Ansible's facts) say x86_64 and aarch64.
ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}


def canonical(architecture: str) -> str:
    return ALIASES.get(architecture, architecture)


def debian(architecture: str) -> str:
    """Debian's name for an architecture (debootstrap's --arch): amd64, arm64."""
    return {canonical: debian for debian, canonical in ALIASES.items()}.get(architecture, architecture)


def of_engine(engine: docker.DockerClient) -> str:
    """The architecture a Docker engine builds for (the controller's, when it is the controller's engine)."""
    return canonical(engine.info()["Architecture"])


def of_image(image: Any) -> str:
    """The platform an image's own configuration declares."""
    return canonical(image.attrs["Architecture"])


def of_host(host: str, console: Console) -> str:
    """The host's architecture: its own facts, unless its inventory sets preflight_architecture."""
    result = playbook.run("architecture", host, {}, console)
    return canonical(str(result.handed_by(host, "preflight_architecture")))


def require_buildable(host: str, host_architecture: str, controller_architecture: str) -> None:
    """Refuse, before any build, to make images on this controller for a host of another architecture."""
    if host_architecture == controller_architecture:
        return
    raise StationError(
        f"{host} is {host_architecture} and this controller is {controller_architecture}: images built here would "
        f"not run there, and nothing was built or copied",
        f"run station from a {host_architecture} controller: {host} itself (an inventory host with "
        f"ansible_connection: local) or another {host_architecture} machine that reaches it (see docs/gpu-hosts.md)",
    )


def require_image_for(host_architecture: str, tag: str, image: Any) -> None:
    """Refuse an image whose platform is not the host's, before it is saved for it."""
    declared = of_image(image)
    if declared != host_architecture:
        raise StationError(
            f"the image {tag} is for {declared}, the host is {host_architecture}: it was not put in the bundle",
            f"build {tag} on a {host_architecture} machine, or remove it and let station build it there",
        )
