"""CPU architectures in one spelling, and the refusals that keep an image off a host it cannot run on."""

from __future__ import annotations

import pytest

from station.deploy import platforms
from station.errors import StationError


@pytest.mark.parametrize(
    ("spelled", "canonical"), [("amd64", "x86_64"), ("x86_64", "x86_64"), ("arm64", "aarch64"), ("aarch64", "aarch64")]
)
def test_docker_s_and_the_kernel_s_names_are_one(spelled: str, canonical: str) -> None:
    assert platforms.canonical(spelled) == canonical


def test_a_host_of_the_controller_s_architecture_is_buildable() -> None:
    platforms.require_buildable("dgx01", "aarch64", "aarch64")


def test_a_host_of_another_architecture_is_refused_with_both_named_and_the_way_out() -> None:
    with pytest.raises(StationError) as refused:
        platforms.require_buildable("dgx01", "aarch64", "x86_64")
    assert "dgx01 is aarch64 and this controller is x86_64" in refused.value.problem
    assert "nothing was built or copied" in refused.value.problem
    assert "aarch64 controller" in refused.value.hint and "ansible_connection: local" in refused.value.hint
