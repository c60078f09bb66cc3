#!/usr/bin/python
"""Ansible module: NVIDIA GPU facts from NVML (nvidia-ml-py), or nvidia-smi where NVML's binding is absent."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

DOCUMENTATION = r"""
module: station_gpu_facts
short_description: NVIDIA GPU facts for station's preflight
description:
  - Reads GPU count, names, memory, driver and CUDA versions, compute capability, MIG and persistence mode.
  - Uses NVML through nvidia-ml-py when the host's Python has it, otherwise nvidia-smi, which ships with every driver.
  - Also counts NVIDIA GPUs on the PCI bus (sysfs), so a GPU without a working driver is told apart from no GPU.
  - Sets ansible_facts.station_gpu. A host without a driver reports present=false with the reason.
options: {}
author: station
"""

RETURN = r"""
ansible_facts:
  description: station_gpu, a dict with present, source, reason, driver_version, cuda_version, count, pci_gpus, gpus.
  returned: always
  type: dict
"""

SMI_FIELDS = "index,name,memory.total,compute_cap,mig.mode.current,persistence_mode"
PCI_NVIDIA = "0x10de"
PCI_DISPLAY_CLASSES = ("0x0300", "0x0302")  # VGA and 3D controllers


def nvml_facts() -> dict:
    """The real path: NVML through nvidia-ml-py."""
    import pynvml

    pynvml.nvmlInit()
    try:
        cuda = pynvml.nvmlSystemGetCudaDriverVersion_v2()
        gpus = [_nvml_gpu(pynvml, index) for index in range(pynvml.nvmlDeviceGetCount())]
        return _facts("nvml", _text(pynvml.nvmlSystemGetDriverVersion()), f"{cuda // 1000}.{cuda % 1000 // 10}", gpus)
    finally:
        pynvml.nvmlShutdown()


def _nvml_gpu(pynvml, index: int) -> dict:
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
    try:
        mig = "Enabled" if pynvml.nvmlDeviceGetMigMode(handle)[0] else "Disabled"
    except pynvml.NVMLError:
        mig = None
    persistence = pynvml.nvmlDeviceGetPersistenceMode(handle)
    return {
        "index": index,
        "name": _text(pynvml.nvmlDeviceGetName(handle)),
        "memory_total_mib": pynvml.nvmlDeviceGetMemoryInfo(handle).total // 2**20,
        "compute_capability": f"{major}.{minor}",
        "mig_mode": mig,
        "persistence_mode": "Enabled" if persistence else "Disabled",
    }


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def smi_facts(smi: str) -> dict:
    """nvidia-smi's CSV and banner, for hosts whose Python has no NVML binding."""
    query = subprocess.run(
        [smi, f"--query-gpu={SMI_FIELDS},driver_version", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=False,
    )
    if query.returncode != 0:
        return _absent(f"nvidia-smi failed: {(query.stdout + query.stderr).strip()[:300]}")
    banner = subprocess.run([smi], capture_output=True, text=True, check=False).stdout
    return parse_smi(query.stdout, banner)


def parse_smi(csv: str, banner: str) -> dict:
    gpus, drivers = [], set()
    for line in filter(None, (row.strip() for row in csv.splitlines())):
        index, name, memory, capability, mig, persistence, driver = (cell.strip() for cell in line.split(","))
        drivers.add(driver)
        gpus.append(
            {
                "index": int(index),
                "name": name,
                "memory_total_mib": int(float(memory)),
                "compute_capability": capability,
                "mig_mode": None if mig.startswith("[") else mig,
                "persistence_mode": persistence,
            }
        )
    cuda = re.search(r"CUDA Version:\s*([0-9.]+)", banner)
    return _facts("nvidia-smi", ",".join(sorted(drivers)), cuda.group(1) if cuda else None, gpus)


def _facts(source: str, driver: str | None, cuda: str | None, gpus: list[dict]) -> dict:
    return {
        "present": bool(gpus),
        "source": source,
        "reason": "" if gpus else "the driver reports no GPU",
        "driver_version": driver,
        "cuda_version": cuda,
        "count": len(gpus),
        "gpus": gpus,
        "memory_total_mib_min": min((gpu["memory_total_mib"] for gpu in gpus), default=0),
    }


def _absent(reason: str) -> dict:
    return _facts("none", None, None, []) | {"reason": reason}


def pci_gpus(sysfs: Path = Path("/sys/bus/pci/devices")) -> int:
    """NVIDIA display/3D controllers on the PCI bus, seen with or without a driver."""
    count = 0
    for device in sysfs.glob("*"):
        try:
            vendor = (device / "vendor").read_text().strip()
            device_class = (device / "class").read_text().strip()
        except OSError:
            continue
        count += vendor == PCI_NVIDIA and device_class[:6] in PCI_DISPLAY_CLASSES
    return count


def gpu_facts() -> dict:
    try:
        facts = nvml_facts()
    except ImportError:
        smi = shutil.which("nvidia-smi")
        facts = smi_facts(smi) if smi else _absent("no NVIDIA driver: nvidia-smi is not installed")
    except Exception as error:  # NVML's own errors: driver not loaded, library missing, ...
        facts = _absent(f"NVML: {error}")
    return facts | {"pci_gpus": pci_gpus()}


def main() -> None:
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    module.exit_json(changed=False, ansible_facts={"station_gpu": gpu_facts()})


if __name__ == "__main__":
    main()
