"""Build the images station makes (on this controller's Docker engine or a host's), with the Docker SDK.

Everything is built FROM a Debian base imported from a debootstrap root
filesystem, so no registry is ever contacted; a host's engine completes its own
base from a first stage unpacked here for its architecture. The tag carries the
pinned version; a label carries a digest of what the build reads, so an image is
rebuilt when its Dockerfile or inputs change and reused otherwise.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn

from station import paths
from station.deploy import lock, platforms, wheelhouse
from station.errors import StationError
from station.recipes.recipe import LOCAL_IMAGES

BASE_IMAGE = f"{LOCAL_IMAGES}base:bookworm"
DEBIAN_SUITE = "bookworm"
FIRST_STAGE = f"{LOCAL_IMAGES}base-first-stage:bookworm"
SECOND_STAGE = f"FROM {FIRST_STAGE}\nRUN /debootstrap/debootstrap --second-stage\n"


DIGEST_LABEL = "io.station.build-digest"

# Files from elsewhere in the bundle that a build folder's context needs.
EXTRA_SOURCES: dict[str, list[Path]] = {"vllm-cpu": [paths.ROOT / "station" / "generators" / "tiny_model.py"]}


def _add_locked_wheels(folder: str, pins: Path, context: Path, architecture: str) -> None:
    """The wheels a build folder's lock (`pins`) pins for the building engine's architecture (so the lock, hashed
    below, stands for them), linked into the context's wheelhouse: no other wheel of the cache is sent."""
    with lock.wheels():
        cached = wheelhouse.ensure(pins, wheelhouse.cache(folder, architecture), architecture)
        wheels = wheelhouse.locked_wheels(pins, cached)
    (context / "wheelhouse").mkdir()
    for wheel in wheels:
        (context / "wheelhouse" / wheel.name).symlink_to(wheel)


def lock_of(folder: str) -> Path | None:
    """docker/<folder>'s requirements.lock, when its build installs pinned wheels."""
    pins = paths.DOCKER / folder / "requirements.lock"
    return pins if pins.exists() else None


def build_digest(folder: str, build_args: dict[str, str]) -> str:
    """A digest of every file and argument an image's build reads, wheel contents stood for by their lock."""
    digest = hashlib.sha256(repr(sorted(build_args.items())).encode())
    own = sorted(p for p in (paths.DOCKER / folder).rglob("*") if p.is_file())
    for path in own + EXTRA_SOURCES.get(folder, []):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def client() -> docker.DockerClient:
    """A client for the local Docker engine, or a clear error saying how to get one."""
    return _answering(
        lambda: docker.from_env(timeout=600),
        "the Docker engine is not reachable",
        "install it (Debian/Ubuntu: apt-get install docker.io) and start it "
        "(systemctl start docker, or `dockerd &` where there is no systemd)",
    )


def host_client(host: str, base_url: str) -> docker.DockerClient:
    """A client for a host's Docker engine at `base_url` (station.deploy.tunnel.docker_socket)."""
    return _answering(
        lambda: docker.DockerClient(base_url=base_url, timeout=600),
        f"the Docker engine on {host} did not answer its SSH user",
        f"provision {host} (invoke provision --host {host} puts that user in the docker group), or set "
        f"station_image_builds: controller for it to get its images in the offline bundle instead",
    )


def _answering(connect: Callable[[], docker.DockerClient], problem: str, fix: str) -> docker.DockerClient:
    """The client `connect` makes, once its engine answers a ping; else `problem` with the error, and `fix`."""
    try:
        engine = connect()
        engine.ping()
    except DockerException as exc:
        raise StationError(f"{problem} ({exc.__class__.__name__}: {exc})", fix) from exc
    return engine


def build_log(tag: str, host: str = "") -> Path:
    """Where the controller keeps the log of a build of `tag` (on `host`'s engine, where given)."""
    return paths.LOGS / f"build-{host + '-' if host else ''}{tag.replace('/', '_').replace(':', '_')}.log"


def uses_base(folder: str) -> bool:
    """True when docker/<folder> builds FROM station's Debian base (imported here, not pulled)."""
    return "ARG BASE_IMAGE" in (paths.DOCKER / folder / "Dockerfile").read_text()


def require_wheels_for(folders: list[str], architecture: str) -> None:
    """Refuse, before any build, a folder whose lock pins no wheels for `architecture`."""
    for folder in folders:
        pins = lock_of(folder)
        if pins:
            wheelhouse.require_architecture(pins, architecture)


def image_id(engine: docker.DockerClient, tag: str) -> str | None:
    try:
        return engine.images.get(tag).id
    except ImageNotFound:
        return None


# Opens a status line, whose update(text) says what a build does now: Console.status, or one line of a BuildProgress
StatusLine = Callable[[str], AbstractContextManager[Any]]


class BuildProgress:
    """One live display for builds that run at once, a line each: rich shows one live display at a time."""

    def __init__(self, console: Console) -> None:
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), console=console, transient=True)

    def __enter__(self) -> BuildProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    @contextlib.contextmanager
    def line(self, text: str) -> Iterator[Any]:
        task = self.progress.add_task(text, total=None)
        try:
            yield SimpleNamespace(update=lambda now: self.progress.update(task, description=now))
        finally:
            self.progress.remove_task(task)


Builds = dict[str, tuple[str, dict[str, str]]]  # image tag → (docker/ folder, build arguments)


def ensure_all(engine: docker.DockerClient, builds: Builds, console: Console) -> None:
    """Each image on this controller's engine, the missing ones built side by side: an image build mostly keeps one
    core busy, and the engine's takes minutes where the others take seconds. The first failure is raised once every
    build has ended."""
    failures: list[BaseException] = []
    with BuildProgress(console) as progress:

        def build(tag: str, folder: str, build_args: dict[str, str]) -> None:
            try:
                ensure(engine, tag, folder, console, build_args, status=progress.line)
            except BaseException as error:  # raised in the calling thread, below
                failures.append(error)

        # Daemon threads: Ctrl-C ends the command at once, and the engine stops a build whose client went
        threads = [threading.Thread(target=build, args=(tag, *how), daemon=True) for tag, how in builds.items()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if failures:
        raise failures[0]


def ensure(
    engine: docker.DockerClient,
    tag: str,
    folder: str,
    console: Console,
    build_args: dict[str, str] | None = None,
    host: str = "",
    status: StatusLine | None = None,
) -> str:
    """The id of image `tag` on `engine` (this controller's, or `host`'s own), built from docker/<folder> when
    missing or built from other inputs. One build of an image at a time on this controller's engine (a second command
    building the same image waits, then finds it built); a host's engine is its command's alone (the host lock)."""
    with contextlib.nullcontext() if host else lock.builds(tag):
        return _ensure(engine, tag, folder, console, build_args or {}, host, status or console.status)


def _ensure(
    engine: docker.DockerClient,
    tag: str,
    folder: str,
    console: Console,
    build_args: dict[str, str],
    host: str,
    status: StatusLine,
) -> str:
    digest = build_digest(folder, build_args)
    try:
        existing = engine.images.get(tag)
    except ImageNotFound:
        existing = None
    if existing is not None and existing.labels.get(DIGEST_LABEL) == digest:
        return existing.id
    with tempfile.TemporaryDirectory(prefix="station-build-") as tmp:
        context = Path(tmp) / "context"
        shutil.copytree(paths.DOCKER / folder, context)
        for source in EXTRA_SOURCES.get(folder, []):
            shutil.copy(source, context / source.name)
        pins = lock_of(folder)
        if pins:  # before the base: a download of the wheels goes on while another build makes the base
            with status(f"Preparing the wheels of {tag}"):
                _add_locked_wheels(folder, pins, context, platforms.of_engine(engine))
        if uses_base(folder):
            ensure_base(engine, console, host, status)
            build_args = {"BASE_IMAGE": BASE_IMAGE, **build_args}
        built = _build(engine, _archive(context), tag, build_args, {DIGEST_LABEL: digest}, console, host, status)
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
    host: str,
    status: StatusLine,
) -> str:
    """Build from the context archive, showing the step and the time so far; the log stays on this controller."""
    where = f" on {host}" if host else ""
    log_path = build_log(tag, host)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with archive.open("rb") as context, log_path.open("w") as log, status(f"Building {tag}{where}") as line:
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
                    error = chunk["error"].strip()
                    raise StationError(f"building {tag}{where} failed: {error}", f"full log: {log_path}")
                step = chunk.get("stream", "")
                if step.startswith("Step "):
                    elapsed = time.monotonic() - started
                    line.update(f"Building {tag}{where} ({elapsed:.0f} s so far): {step.strip()[:100]}")
                    step = f"[{elapsed:4.0f} s] {step}"
                log.write(step)
        except APIError as exc:
            raise StationError(f"building {tag}{where} failed: {exc}", f"full log: {log_path}") from exc
    built = image_id(engine, tag)
    if not built:
        raise StationError(f"building {tag}{where} produced no image", f"full log: {log_path}")
    console.print(f"Built {tag}{where} ({built[:19]}) in {time.monotonic() - started:.0f} s; log: {log_path}")
    return built


def ensure_base(engine: docker.DockerClient, console: Console, host: str = "", status: StatusLine | None = None) -> str:
    """The Debian base image on `engine`, made when missing: debootstrapped here for this controller's own engine; for
    `host`'s engine, in two stages, so that it is native to the host whatever this controller's architecture."""
    with contextlib.nullcontext() if host else lock.builds(BASE_IMAGE):  # the images built from it wait for it
        return image_id(engine, BASE_IMAGE) or _make_base(engine, console, host, status or console.status)


def _make_base(engine: docker.DockerClient, console: Console, host: str, status: StatusLine) -> str:
    if not shutil.which("debootstrap"):
        raise StationError(
            f"{BASE_IMAGE} is missing and debootstrap is not installed",
            "apt-get install debootstrap (the base image is built from Debian's mirror, no registry needed)",
        )
    with tempfile.TemporaryDirectory(prefix="station-rootfs-") as tmp:
        if host:
            _base_in_two_stages(engine, Path(tmp), console, host, status)
        else:
            with status(f"Building {BASE_IMAGE} with debootstrap (about 30 s)"):
                _import_rootfs(engine, BASE_IMAGE, Path(tmp), ["--variant=minbase"])
            console.print(f"Built {BASE_IMAGE}")
    return image_id(engine, BASE_IMAGE) or ""


def _base_in_two_stages(
    engine: docker.DockerClient, tmp: Path, console: Console, host: str, status: StatusLine
) -> None:
    """Debootstrap's first stage here, for the host's architecture (it only unpacks Debian's packages: nothing of the
    host's architecture runs here), then its second stage built by the host's own engine, which runs it natively."""
    architecture, started = platforms.of_engine(engine), time.monotonic()
    with status(f"Unpacking Debian {DEBIAN_SUITE} for {architecture} (debootstrap's first stage)"):
        options = ["--foreign", f"--arch={platforms.debian(architecture)}", "--variant=minbase"]
        _import_rootfs(engine, FIRST_STAGE, tmp, options)
    console.print(
        f"Unpacked Debian {DEBIAN_SUITE} for {architecture} here in {time.monotonic() - started:.0f} s "
        f"(debootstrap's first stage); {host} runs the second"
    )
    context = tmp / "second-stage"
    context.mkdir()
    (context / "Dockerfile").write_text(SECOND_STAGE)
    try:
        _build(engine, _archive(context), BASE_IMAGE, {}, {}, console, host, status)
    finally:
        _remove_quietly(engine, FIRST_STAGE)


def _import_rootfs(engine: docker.DockerClient, tag: str, tmp: Path, options: list[str]) -> None:
    """`tag` on `engine`, imported from a root filesystem debootstrap makes here with `options`."""
    rootfs, archive = tmp / "rootfs", tmp / "rootfs.tar"
    _run(["debootstrap", *options, DEBIAN_SUITE, str(rootfs)])
    _run(["tar", "-C", str(rootfs), "-cf", str(archive), "."])
    repository, version = tag.split(":")
    engine.api.import_image_from_file(str(archive), repository=repository, tag=version)


def _archive(context: Path) -> Path:
    """A build context as one tar beside it, links followed (the wheelhouse links to the shared cache; Docker does
    not follow links)."""
    archive = context.with_suffix(".tar")
    with tarfile.open(archive, "w", dereference=True) as tar:
        tar.add(context, arcname=".")
    return archive


def _run(cmd: list[str]) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise StationError(f"{cmd[0]} failed: {result.stderr.strip()[-1500:]}", "run it as root on Debian/Ubuntu")
