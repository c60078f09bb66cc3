"""The real NVML path of station_gpu_facts, on a real NVIDIA GPU (`pytest -m gpu`); skipped where NVML finds none."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.conftest import ansible_module

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_facts():
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        pytest.skip(f"no NVIDIA GPU here: NVML says {error}")
    pynvml.nvmlShutdown()
    return ansible_module("library/station_gpu_facts.py")


def test_nvml_reports_every_gpu_with_its_driver_and_memory(gpu_facts) -> None:
    facts = gpu_facts.nvml_facts()
    print(facts)
    assert facts["present"] and facts["source"] == "nvml" and facts["count"] >= 1
    assert re.fullmatch(r"[0-9]+\.[0-9]+(\.[0-9]+)?", facts["driver_version"])
    assert re.fullmatch(r"[0-9]+\.[0-9]+", facts["cuda_version"])
    for gpu in facts["gpus"]:
        assert gpu["memory_total_mib"] > 1024
        assert re.fullmatch(r"[0-9]+\.[0-9]+", gpu["compute_capability"])
        assert gpu["persistence_mode"] in {"Enabled", "Disabled"}


def test_nvml_and_nvidia_smi_agree(gpu_facts) -> None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        pytest.skip("nvidia-smi is not on PATH")
    nvml, cli = gpu_facts.nvml_facts(), gpu_facts.smi_facts(smi)
    assert cli["count"] == nvml["count"]
    assert cli["driver_version"] == nvml["driver_version"]
    assert [g["name"] for g in cli["gpus"]] == [g["name"] for g in nvml["gpus"]]
    assert [g["compute_capability"] for g in cli["gpus"]] == [g["compute_capability"] for g in nvml["gpus"]]
