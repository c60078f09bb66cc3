"""Every external image, package, wheel and commit the product references is in the pin ledger (docs/pins.yml),
with its evidence; images pinned by digest, and everything ready for arm64."""

from __future__ import annotations

import re

import pytest
import yaml

from station import paths
from station.recipes import models, recipe

LEDGER = yaml.safe_load((paths.ROOT / "docs" / "pins.yml").read_text())
PINNED = {entry["ref"]: entry for entry in LEDGER["images"]}
PACKAGES = {entry["ref"]: entry for entry in LEDGER["packages"]}
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def role_default_images() -> list[str]:
    """Every *_image default of a role and of the inventory that names a registry image (not station's own)."""
    files = [*paths.ANSIBLE.glob("roles/*/defaults/main.yml"), *paths.ANSIBLE.glob("inventory/group_vars/*.yml")]
    found = []
    for path in files:
        for name, value in (yaml.safe_load(path.read_text()) or {}).items():
            if name.endswith("_image") and isinstance(value, str) and "/" in value and "{{" not in value:
                found.append(value)
    return [image for image in found if not image.startswith("station.invalid/")]


def dockerfile_images() -> list[str]:
    args = re.compile(r"^ARG \w+_IMAGE=(\S+)$", re.MULTILINE)
    found = [m for path in paths.DOCKER.glob("*/Dockerfile") for m in args.findall(path.read_text())]
    return [image for image in found if not image.startswith("station.invalid/")]


def recipe_images() -> list[str]:
    found = [r.engine.image for name in recipe.available() for _, r in recipe.load_labelled(name)]
    return [image for image in found if not image.startswith("station.invalid/")]


REFERENCED = sorted(set(role_default_images() + dockerfile_images() + recipe_images()))


def test_the_scan_finds_the_images_it_should() -> None:
    assert any("dcgm-exporter" in image for image in REFERENCED)
    assert any(image.startswith("nvidia/cuda:") for image in REFERENCED)


@pytest.mark.parametrize("image", REFERENCED)
def test_every_referenced_image_is_in_the_ledger(image: str) -> None:
    assert image in PINNED, f"{image} has no entry in docs/pins.yml: look up its evidence and add it"


@pytest.mark.parametrize("image", REFERENCED)
def test_every_referenced_image_is_pinned_by_digest_and_runs_on_arm64(image: str) -> None:
    assert DIGEST.search(image), f"{image} is not pinned by digest"
    assert "arm64" in PINNED[image]["arches"]


def role_default(role: str, name: str) -> str:
    return str(yaml.safe_load((paths.ANSIBLE / "roles" / role / "defaults" / "main.yml").read_text())[name])


def dockerfile_arg(folder: str, name: str) -> str:
    (value,) = re.findall(rf"^ARG {name}=(\S+)$", (paths.DOCKER / folder / "Dockerfile").read_text(), re.MULTILINE)
    return value


def referenced_packages() -> list[str]:
    """What the GPU path installs or builds from, spelled as the ledger's refs."""
    keyring = role_default("nvidia_driver", "nvidia_driver_cuda_keyring_url").rsplit("/", 1)[1]
    commits = {
        r.engine.build_args["VLLM_COMMIT"]
        for name in recipe.available()
        for _, r in recipe.load_labelled(name)
        if "VLLM_COMMIT" in r.engine.build_args
    }
    return [
        f"nvidia-container-toolkit={role_default('nvidia_container_toolkit', 'nvidia_container_toolkit_version')}",
        f"nvidia-driver-{role_default('nvidia_driver', 'nvidia_driver_branch')}",
        f"nvidia-driver>={role_default('nvidia_driver', 'nvidia_driver_min_version')}",
        keyring,
        f"vllm-router=={dockerfile_arg('vllm-router', 'VLLM_ROUTER_VERSION')}",
        f"nginx={dockerfile_arg('vllm-router', 'NGINX_VERSION')} (Debian 12)",
        *(f"vllm@{commit}" for commit in sorted(commits)),
    ]


def test_the_package_scan_finds_the_gpu_engine_commit() -> None:
    assert any(ref.startswith("vllm@") for ref in referenced_packages())


@pytest.mark.parametrize("ref", referenced_packages())
def test_every_referenced_package_is_in_the_ledger_for_both_architectures(ref: str) -> None:
    assert ref in PACKAGES, f"{ref} has no entry under packages: in docs/pins.yml: look up its evidence and add it"
    assert {"amd64", "arm64"} <= set(PACKAGES[ref]["arches"])


@pytest.mark.parametrize(
    "entry", LEDGER["images"] + LEDGER["packages"] + LEDGER["models"], ids=lambda entry: entry["ref"].split("@")[0]
)
def test_every_ledger_entry_has_evidence_and_a_date(entry: dict) -> None:
    assert entry["evidence"] and all(len(line) > 40 for line in entry["evidence"])
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(entry["checked"]))


MODELS = {entry["ref"]: entry for entry in LEDGER["models"]}
HUB_MODELS = sorted(
    {r.model.id for name in recipe.available() for _, r in recipe.load_labelled(name) if r.model.source == "hub"}
)


@pytest.mark.parametrize("model", HUB_MODELS)
def test_every_hub_model_a_recipe_serves_is_in_the_ledger_with_its_card(model: str) -> None:
    assert model in MODELS, f"{model} has no entry under models: in docs/pins.yml: look up its evidence and add it"
    assert models.card(model).id == model
    assert (paths.ROOT / MODELS[model]["card"]).is_file()
