"""station_gpu_facts, the Ansible module behind the preflight's GPU facts."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES, ansible_module, run_module


@pytest.fixture(scope="module")
def gpu_facts():
    return ansible_module("library/station_gpu_facts.py")


H200_CSV = (
    "0, NVIDIA H200, 143771, 9.0, Disabled, Enabled, 580.95.05\n"
    "1, NVIDIA H200, 143771, 9.0, Enabled, Enabled, 580.95.05\n"
)
BANNER = "| NVIDIA-SMI 580.95.05     Driver Version: 580.95.05     CUDA Version: 13.0     |"


def test_nvidia_smi_output_becomes_facts(gpu_facts) -> None:
    facts = gpu_facts.parse_smi(H200_CSV, BANNER)
    assert facts["present"] and facts["source"] == "nvidia-smi"
    assert (facts["count"], facts["driver_version"], facts["cuda_version"]) == (2, "580.95.05", "13.0")
    assert facts["gpus"][1] == {
        "index": 1,
        "name": "NVIDIA H200",
        "memory_total_mib": 143771,
        "compute_capability": "9.0",
        "mig_mode": "Enabled",
        "persistence_mode": "Enabled",
    }
    assert facts["memory_total_mib_min"] == 143771


def test_mig_not_supported_reads_as_none(gpu_facts) -> None:
    facts = gpu_facts.parse_smi("0, NVIDIA GeForce, 8192, 8.6, [N/A], Disabled, 580.95.05\n", BANNER)
    assert facts["gpus"][0]["mig_mode"] is None


def test_no_gpus_is_not_present(gpu_facts) -> None:
    facts = gpu_facts.parse_smi("", BANNER)
    assert not facts["present"] and facts["count"] == 0 and facts["reason"]


def test_the_fixture_stand_in_reads_like_nvidia_smi(gpu_facts, tmp_path) -> None:
    """The sim's fixture nvidia-smi goes through the same parser as the real one."""
    smi = str(FIXTURES / "sim" / "fixture-nvidia-smi")
    facts = gpu_facts.smi_facts(smi)
    assert facts["gpus"][0]["name"] == "FIXTURE GPU (stand-in)"
    assert (facts["driver_version"], facts["cuda_version"]) == ("580.95.05", "13.0")


def test_pci_scan_counts_nvidia_display_controllers(gpu_facts, tmp_path) -> None:
    for name, vendor, device_class in [
        ("a", "0x10de", "0x030200"),
        ("b", "0x10de", "0x040300"),
        ("c", "0x8086", "0x030000"),
    ]:
        device = tmp_path / name
        device.mkdir()
        (device / "vendor").write_text(vendor + "\n")
        (device / "class").write_text(device_class + "\n")
    assert gpu_facts.pci_gpus(tmp_path) == 1


def test_module_runs_on_this_machine(gpu_facts) -> None:
    """Run as Ansible runs it; here (no NVIDIA driver in CI) it reports absence with a reason."""
    result = run_module("station_gpu_facts")
    assert result.returncode == 0, result.stdout + result.stderr
    assert '"station_gpu"' in result.stdout and '"pci_gpus"' in result.stdout
