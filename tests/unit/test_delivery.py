"""Where a host's station-built images are made: by its own Docker engine, or here for the offline bundle."""

from __future__ import annotations

from pathlib import Path

import pytest

from station.deploy import delivery, images, inventory, platforms, tunnel
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


@pytest.mark.parametrize(("folder", "made_here"), [("vllm", False), ("vllm-cpu", True), ("vllm-router", True)])
def test_only_builds_from_the_controller_s_base_or_wheels_are_tied_to_its_architecture(folder, made_here) -> None:
    """The GPU engine builds FROM a multi-arch CUDA image and fetches its own sources, so it builds on any host; the
    CPU images read the Debian base and the pinned wheels made here."""
    assert images.made_here(folder) is made_here


def test_a_host_of_another_architecture_is_told_what_is_made_here() -> None:
    with pytest.raises(StationError) as refused:
        platforms.require_buildable("dgx01", "aarch64", "x86_64", "the Debian base that vllm-router is built from")
    assert "x86_64: the Debian base that vllm-router is built from would not run there" in refused.value.problem


def test_the_host_s_docker_socket_is_forwarded_to_a_unix_socket_here() -> None:
    connection = {"address": "dgx01", "user": "ops", "port": 22, "private_key": "", "ssh_args": "", "settings": {}}
    forward = tunnel.SocketForward("Docker engine", Path("/tmp/station-docker-x/docker.sock"), tunnel.DOCKER_SOCKET)
    argv = tunnel.ssh_argv(connection, [forward])
    assert [argv[i + 1] for i, part in enumerate(argv) if part == "-L"] == [
        "/tmp/station-docker-x/docker.sock:/var/run/docker.sock"
    ]
