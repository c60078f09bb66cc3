"""GPU telemetry joined to a result: the measured window, power, energy, tokens per joule, throttling."""

from __future__ import annotations

import pytest

from station.bench import telemetry
from tests.conftest import ansible_module


def gpu(power: float, energy: float | None = None, reasons: int = 0) -> dict:
    return {
        "index": 0,
        "power_w": power,
        "energy_j": energy,
        "util_pct": 90,
        "mem_used_mib": 1000,
        "sm_clock_mhz": 1800,
        "temp_c": 60,
        "clocks_event_reasons": reasons,
    }


def test_no_gpu_is_recorded_explicitly() -> None:
    summary = telemetry.summarise({"present": False, "reason": "no NVIDIA driver", "samples": []}, 1000, 10)
    assert summary.present is False and summary.reason == "no NVIDIA driver"
    assert summary.output_tokens_per_joule is None


def test_missing_file_is_recorded_as_missing(tmp_path) -> None:
    raw = telemetry.load(tmp_path / "telemetry.json")
    assert telemetry.summarise(raw, 1, 1).reason == "no telemetry was recorded (telemetry.json missing)"


def test_energy_from_the_driver_counter_and_the_measured_window_only() -> None:
    samples = [{"t": t, "gpus": [gpu(100.0 if t < 10 else 500.0, energy=1000.0 * t)]} for t in range(0, 21)]
    raw = {"present": True, "source": "nvml", "interval_s": 1.0, "samples": samples}
    summary = telemetry.summarise(raw, output_tokens=20_000, duration_s=10)  # the warm-up (t < 10) is left out
    assert summary.samples == 11
    assert summary.avg_power_w == 500.0 and summary.peak_power_w == 500.0
    assert summary.energy_source == "counter" and summary.energy_j == 10_000.0
    assert summary.output_tokens_per_joule == 2.0


def test_energy_integrated_from_power_without_a_counter_and_throttled_seconds() -> None:
    samples = [{"t": t, "gpus": [gpu(200.0, reasons=0x4 if t >= 3 else 0x1)]} for t in range(0, 5)]
    raw = {"present": True, "source": "nvidia-smi", "interval_s": 1.0, "samples": samples}
    summary = telemetry.summarise(raw, output_tokens=1600, duration_s=100)
    assert summary.energy_source == "integrated" and summary.energy_j == pytest.approx(800.0)
    assert summary.output_tokens_per_joule == pytest.approx(2.0)
    assert summary.throttled_s == 2.0  # 0x1 (idle) is not throttling; 0x4 (power cap) is


def test_the_sampler_records_no_gpu_here(tmp_path) -> None:
    """The real sampler on this machine; CI has no GPU, so it must say so rather than write nothing."""
    module = ansible_module("roles/vllm_bench/files/gpu_telemetry.py")
    sampler, reason = module.open_sampler()
    if sampler is not None:
        pytest.skip("this machine has a GPU: tests/gpu/test_telemetry.py covers it")
    assert "nvml" in reason and "nvidia-smi" in reason


class FakeGpuThatFailsMidRun:
    """Stands in for a GPU (none here) whose driver fails after two samples, as NVML does when a GPU falls off the
    bus: the real samplers (Nvml, Smi) raise from sample() the same way."""

    source = "nvml"

    def __init__(self) -> None:
        self.sampled = 0

    def sample(self) -> list[dict]:
        self.sampled += 1
        if self.sampled > 2:
            raise RuntimeError("NVML_ERROR_GPU_IS_LOST")
        return [gpu(300.0)]


def test_a_sampler_that_fails_mid_run_writes_what_it_sampled_and_why_it_stopped(tmp_path, monkeypatch) -> None:
    module = ansible_module("roles/vllm_bench/files/gpu_telemetry.py")
    monkeypatch.setattr(module, "open_sampler", lambda: (FakeGpuThatFailsMidRun(), None))
    out = tmp_path / "telemetry.json"
    argv = ["gpu_telemetry.py", "--out", str(out), "--stop", str(tmp_path / "stop"), "--interval", "0"]
    monkeypatch.setattr("sys.argv", argv)
    module.main()
    raw = telemetry.load(out)
    assert len(raw["samples"]) == 2
    assert raw["stopped"] == "nvml failed after 2 sample(s): NVML_ERROR_GPU_IS_LOST"
    summary = telemetry.summarise(raw, output_tokens=1000, duration_s=10)
    assert summary.present and summary.output_tokens_per_joule is None  # no window measured from a cut-short run
    assert summary.reason == "sampling stopped early: nvml failed after 2 sample(s): NVML_ERROR_GPU_IS_LOST"
