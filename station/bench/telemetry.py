"""GPU telemetry sampled beside a benchmark, joined to its result: power, energy, tokens per joule, throttling.

The sampler (ansible/roles/vllm_bench/files/gpu_telemetry.py) runs for the whole
benchmark, warm-ups included; the summary uses the samples of the measured
part only: the last `duration` seconds before sampling stopped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

# Clock event reasons that mean a power or thermal limit held the clocks down:
# SW power cap 0x4, HW slowdown 0x8, SW thermal 0x20, HW thermal 0x40, HW power brake 0x80.
THROTTLE_MASK = 0x04 | 0x08 | 0x20 | 0x40 | 0x80


class TelemetrySummary(BaseModel):
    present: bool
    reason: str = ""
    source: str = "none"
    samples: int = 0
    gpus: int = 0
    avg_power_w: float | None = None
    peak_power_w: float | None = None
    energy_j: float | None = None
    energy_source: str | None = None  # "counter" (the driver's) or "integrated" (power over time)
    output_tokens_per_joule: float | None = None
    throttled_s: float | None = None
    avg_util_pct: float | None = None
    peak_mem_used_mib: float | None = None
    max_temp_c: float | None = None


def load(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {"present": False, "reason": f"no telemetry was recorded ({path.name} missing)", "samples": []}
    return json.loads(path.read_text())


def measured_window(samples: list[dict[str, Any]], duration_s: float) -> list[dict[str, Any]]:
    if not samples:
        return []
    end = samples[-1]["t"]
    return [sample for sample in samples if sample["t"] >= end - duration_s]


def summarise(raw: dict[str, Any], output_tokens: int, duration_s: float) -> TelemetrySummary:
    if not raw.get("present"):
        return TelemetrySummary(present=False, reason=raw.get("reason") or "no GPU was sampled")
    if raw.get("stopped"):  # its last samples are not the benchmark's end: no window to measure
        return TelemetrySummary(present=True, source=raw["source"], reason=f"sampling stopped early: {raw['stopped']}")
    window = measured_window(raw["samples"], duration_s)
    if len(window) < 2:
        return TelemetrySummary(
            present=True, source=raw["source"], reason="fewer than 2 samples in the measured window"
        )
    host_power = [sum(gpu["power_w"] or 0 for gpu in sample["gpus"]) for sample in window]
    energy, energy_source = _energy(window, host_power)
    interval = raw.get("interval_s", 1.0)
    return TelemetrySummary(
        present=True,
        source=raw["source"],
        samples=len(window),
        gpus=len(window[0]["gpus"]),
        avg_power_w=sum(host_power) / len(host_power),
        peak_power_w=max(host_power),
        energy_j=energy,
        energy_source=energy_source,
        output_tokens_per_joule=output_tokens / energy if energy else None,
        throttled_s=interval * sum(_throttled(sample) for sample in window),
        avg_util_pct=_mean(gpu["util_pct"] for sample in window for gpu in sample["gpus"]),
        peak_mem_used_mib=max((gpu["mem_used_mib"] or 0) for sample in window for gpu in sample["gpus"]),
        max_temp_c=max((gpu["temp_c"] or 0) for sample in window for gpu in sample["gpus"]),
    )


def _energy(window: list[dict[str, Any]], host_power: list[float]) -> tuple[float, str]:
    """The driver's energy counters when every GPU has one, else power integrated over time (trapezoids)."""
    first, last = window[0]["gpus"], window[-1]["gpus"]
    if all(gpu["energy_j"] is not None for gpu in first + last):
        return sum(b["energy_j"] - a["energy_j"] for a, b in zip(first, last, strict=True)), "counter"
    times = [sample["t"] for sample in window]
    pairs = zip(zip(times, host_power, strict=True), zip(times[1:], host_power[1:], strict=True), strict=False)
    return sum((t1 - t0) * (p0 + p1) / 2 for (t0, p0), (t1, p1) in pairs), "integrated"


def _throttled(sample: dict[str, Any]) -> bool:
    return any((gpu["clocks_event_reasons"] or 0) & THROTTLE_MASK for gpu in sample["gpus"])


def _mean(values: Any) -> float | None:
    present = [value for value in values if value is not None]
    return sum(present) / len(present) if present else None
