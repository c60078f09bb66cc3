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
