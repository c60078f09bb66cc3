"""Build the images that hosts without a container registry need, with the Docker SDK.

Everything is built FROM a Debian base imported from a debootstrap root
filesystem, so no registry is ever contacted. The tag carries the pinned
version; a label carries a digest of what the build reads, so an image is
rebuilt when its Dockerfile or inputs change and reused otherwise.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import docker
from docker.errors import APIError, DockerException, ImageNotFound
from rich.console import Console

from station import paths
from station.deploy import lock, wheelhouse
from station.errors import StationError
from station.recipes.recipe import LOCAL_IMAGES

BASE_IMAGE = f"{LOCAL_IMAGES}base:bookworm"
DEBIAN_SUITE = "bookworm"


DIGEST_LABEL = "io.station.build-digest"

# Files from elsewhere in the bundle that a build folder's context needs.
EXTRA_SOURCES: dict[str, list[Path]] = {"vllm-cpu": [paths.ROOT / "station" / "generators" / "tiny_model.py"]}


def _add_locked_wheels(folder: str, context: Path) -> None:
    """The wheels a build folder's requirements.lock pins (so the lock, hashed below, stands for them)."""
    wheels = wheelhouse.ensure(context / "requirements.lock", paths.CACHE / "wheelhouse" / folder)
    (context / "wheelhouse").symlink_to(wheels, target_is_directory=True)


def build_digest(folder: str, build_args: dict[str, str]) -> str:
    """A digest of every file and argument an image's build reads, wheel contents stood for by their lock."""
    digest = hashlib.sha256(repr(sorted(build_args.items())).encode())
    own = sorted(p for p in (paths.DOCKER / folder).rglob("*") if p.is_file())
    for path in own + EXTRA_SOURCES.get(folder, []):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


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


def ensure(
    engine: docker.DockerClient, tag: str, folder: str, console: Console, build_args: dict[str, str] | None = None
) -> str:
    """The id of image `tag`, built from docker/<folder> when missing or built from other inputs; one build at a
    time on this controller (a second command building the same image waits, then finds it built)."""
    with lock.builds():
        return _ensure(engine, tag, folder, console, build_args or {})


def _ensure(engine: docker.DockerClient, tag: str, folder: str, console: Console, build_args: dict[str, str]) -> str:
    digest = build_digest(folder, build_args)
    try:
        existing = engine.images.get(tag)
    except ImageNotFound:
        existing = None
    if existing is not None and existing.labels.get(DIGEST_LABEL) == digest:
        return existing.id
    if "ARG BASE_IMAGE" in (paths.DOCKER / folder / "Dockerfile").read_text():
        ensure_base(engine, console)
        build_args = {"BASE_IMAGE": BASE_IMAGE, **build_args}
    with tempfile.TemporaryDirectory(prefix="station-build-") as tmp:
        context = Path(tmp) / "context"
        shutil.copytree(paths.DOCKER / folder, context)
        for source in EXTRA_SOURCES.get(folder, []):
            shutil.copy(source, context / source.name)
        if (context / "requirements.lock").exists():
            with console.status(f"Preparing the wheels of {tag}"):
                _add_locked_wheels(folder, context)
        archive = Path(tmp) / "context.tar"
        # dereference: the wheelhouse is a link to the shared cache; Docker does not follow links.
        with tarfile.open(archive, "w", dereference=True) as tar:
            tar.add(context, arcname=".")
        built = _build(engine, archive, tag, build_args, {DIGEST_LABEL: digest}, console)
    if existing is not None and existing.id != built:
        _remove_quietly(engine, existing.id)
    return built


def _remove_quietly(engine: docker.DockerClient, image: str) -> None:
    """Drop a superseded build; one still used by a container stays until that container goes."""
    with contextlib.suppress(APIError):
        engine.images.remove(image)


def _build(
    engine: docker.DockerClient,
    archive: Path,
    tag: str,
    build_args: dict[str, str],
    labels: dict[str, str],
    console: Console,
) -> str:
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
                buildargs=build_args,
                labels=labels,
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
