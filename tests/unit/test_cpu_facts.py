"""station_cpu_facts, the Ansible module that tells a CPU engine's dtype and records the CPU with every run."""

from __future__ import annotations

import pytest

from tests.conftest import ansible_module, run_module


# /proc/cpuinfo of the CPUs this project runs on, shortened to the lines the module reads
def cpuinfo(model: str, flags: str) -> str:
    return f"processor\t: 0\nmodel name\t: {model}\nflags\t\t: fpu {flags}\n"


XEON_AMX = cpuinfo("Intel(R) Xeon(R) Processor", "avx2 avx512f avx512_bf16 amx_tile amx_bf16")
EPYC_ZEN4 = cpuinfo("AMD EPYC 9454P 48-Core Processor", "avx2 avx512f avx512_bf16")
SKYLAKE = cpuinfo("Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", "avx2 avx512f")
GRACE = "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd sve bf16 i8mm\nCPU implementer\t: 0x41\n"
AMX_FLAGS = ["avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16"]


@pytest.fixture(scope="module")
def cpu_facts():
    return ansible_module("library/station_cpu_facts.py")


@pytest.mark.parametrize(
    ("text", "model", "flags", "dtype"),
    [
        (XEON_AMX, "Intel(R) Xeon(R) Processor", AMX_FLAGS, "bfloat16"),
        (EPYC_ZEN4, "AMD EPYC 9454P 48-Core Processor", ["avx2", "avx512f", "avx512_bf16"], "bfloat16"),
        (SKYLAKE, "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", ["avx2", "avx512f"], "float32"),
        (GRACE, "", ["asimd", "sve", "bf16"], "bfloat16"),
    ],
)
def test_the_dtype_follows_the_cpus_bfloat16_support(cpu_facts, text, model, flags, dtype) -> None:
    facts = cpu_facts.parse_cpuinfo(text + text.replace("processor\t: 0", "processor\t: 1"))
    assert (facts["model"], facts["flags"], facts["dtype"]) == (model, flags, dtype)
    assert facts["bfloat16"] == ("native" if dtype == "bfloat16" else "emulated")


def test_module_runs_on_this_machine(cpu_facts) -> None:
    """Run as Ansible runs it, it reports what the module's own function reads here."""
    result = run_module("station_cpu_facts")
    assert result.returncode == 0, result.stdout + result.stderr
    here = cpu_facts.cpu_facts()
    assert '"station_cpu"' in result.stdout and f'"dtype": "{here["dtype"]}"' in result.stdout
