"""The GPU sampler on a real NVIDIA GPU (`pytest -m gpu`): non-zero power and energy; skipped where NVML finds none."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest

from station import paths
from station.bench import telemetry

pytestmark = pytest.mark.gpu

SAMPLER = paths.ANSIBLE / "roles" / "vllm_bench" / "files" / "gpu_telemetry.py"


def test_sampler_reads_power_and_energy(tmp_path) -> None:
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        pytest.skip(f"no NVIDIA GPU here: NVML says {error}")
    out, stop = tmp_path / "telemetry.json", tmp_path / "stop"
    threading.Timer(4.0, stop.touch).start()
    subprocess.run(
        [sys.executable, str(SAMPLER), "--out", str(out), "--stop", str(stop), "--max-seconds", "30"], check=True
    )
    raw = json.loads(out.read_text())
    print(json.dumps(raw["samples"][-1], indent=1))
    assert raw["present"] and raw["source"] == "nvml" and len(raw["samples"]) >= 3
    summary = telemetry.summarise(raw, output_tokens=1000, duration_s=60)
    print(summary)
    assert summary.avg_power_w > 0 and summary.energy_j > 0
    assert summary.energy_source == "counter"
