#!/usr/bin/python
"""Ansible module: the host CPU's model, cores and the instruction-set flags that set a CPU engine's speed."""

from __future__ import annotations

import os
from pathlib import Path

DOCUMENTATION = r"""
module: station_cpu_facts
short_description: The host CPU as vLLM's CPU engine sees it, for station's engine and provenance
description:
  - Reads /proc/cpuinfo: the model, and which of the flags vLLM's CPU backend picks its kernels by the CPU has.
  - Says whether bfloat16 runs natively (AVX512-BF16 or AMX on x86_64, BF16 on aarch64) or emulated through float32.
  - Sets ansible_facts.station_cpu.
options: {}
author: station
"""

RETURN = r"""
ansible_facts:
  description: station_cpu, a dict with model, cores, flags (the speed-setting ones it has), bfloat16 (native or
    emulated) and dtype (what an engine that follows the CPU runs, bfloat16 or float32).
  returned: always
  type: dict
"""

# The flags vLLM's CPU backend picks kernels by (vllm/platforms/cpu.py, csrc/cpu/cpu_types_x86.hpp): AVX512 with
# AVX512-BF16 computes bfloat16 natively and AMX tiles serve its attention; without them bfloat16 is emulated through
# float32, about 3x slower than float32 itself. x86_64 lists them under "flags", aarch64 under "Features".
SPEED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "asimd", "sve", "bf16")
NATIVE_BFLOAT16 = frozenset({"avx512_bf16", "amx_bf16", "bf16"})


def parse_cpuinfo(text: str) -> dict:
    """The model and the speed-setting flags of the first processor /proc/cpuinfo lists (all are alike)."""
    model, flags = "", set()
    for line in text.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key in ("model name", "Model") and not model:
            model = value
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split())
    bfloat16 = "native" if flags & NATIVE_BFLOAT16 else "emulated"
    return {
        "model": model,
        "flags": [flag for flag in SPEED_FLAGS if flag in flags],
        "bfloat16": bfloat16,
        "dtype": "bfloat16" if bfloat16 == "native" else "float32",
    }


def cpu_facts(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict:
    return parse_cpuinfo(cpuinfo.read_text()) | {"cores": len(os.sched_getaffinity(0))}


def main() -> None:
    from ansible.module_utils.basic import AnsibleModule

    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    module.exit_json(changed=False, ansible_facts={"station_cpu": cpu_facts()})


if __name__ == "__main__":
    main()
