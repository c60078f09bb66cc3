"""Sample the host's NVIDIA GPUs about once a second until a stop file appears.

The bench role runs it on the host beside every benchmark:

    python3 gpu_telemetry.py --out telemetry.json --stop telemetry.stop [--interval 1] [--max-seconds N]

Reads NVML through nvidia-ml-py where the host's Python has it, else
nvidia-smi. On a host without a GPU it writes that explicitly
({"present": false, "reason": ...}) instead of nothing. Each sample:
{"t": unix time, "gpus": [{"index", "power_w", "energy_j", "util_pct",
"mem_used_mib", "sm_clock_mhz", "temp_c", "clocks_event_reasons"}]};
energy_j is the driver's energy counter (NVML only), else null. A sampler that
fails mid-run stops, saying why in "stopped", and writes what it sampled.
"""

import argparse
import json
import os
import shutil
import subprocess
import time

SMI_FIELDS = "index,power.draw,utilization.gpu,memory.used,clocks.sm,temperature.gpu,clocks_event_reasons.active"


class Nvml:
    source = "nvml"

    def __init__(self):
        import pynvml

        pynvml.nvmlInit()
        self.nvml = pynvml
        self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        if not self.handles:
            raise RuntimeError("NVML reports no GPU")

    def sample(self):
        return [self._gpu(index, handle) for index, handle in enumerate(self.handles)]

    def _gpu(self, index, handle):
        nvml = self.nvml
        reasons = (
            getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
            or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
        )
        return {
            "index": index,
            "power_w": nvml.nvmlDeviceGetPowerUsage(handle) / 1000,
            "energy_j": _optional(lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(handle) / 1000),
            "util_pct": nvml.nvmlDeviceGetUtilizationRates(handle).gpu,
            "mem_used_mib": nvml.nvmlDeviceGetMemoryInfo(handle).used // 2**20,
            "sm_clock_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
            "temp_c": nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),
            "clocks_event_reasons": _optional(lambda: reasons(handle)),
        }


class Smi:
    source = "nvidia-smi"

    def __init__(self):
        self.smi = shutil.which("nvidia-smi")
        if not self.smi:
            raise RuntimeError("no NVIDIA driver: neither nvidia-ml-py nor nvidia-smi is available")
        if not self.sample():
            raise RuntimeError("nvidia-smi reports no GPU")

    def sample(self):
        query = [self.smi, f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader,nounits"]
        result = subprocess.run(query, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"nvidia-smi failed: {(result.stdout + result.stderr).strip()[:300]}")
        return [_smi_row(line) for line in result.stdout.splitlines() if line.strip()]


def _smi_row(line):
    index, power, util, memory, clock, temp, reasons = (cell.strip() for cell in line.split(","))
    return {
        "index": int(index),
        "power_w": _number(power),
        "energy_j": None,
        "util_pct": _number(util),
        "mem_used_mib": _number(memory),
        "sm_clock_mhz": _number(clock),
        "temp_c": _number(temp),
        "clocks_event_reasons": int(reasons, 16) if reasons.startswith("0x") else None,
    }


def _number(text):
    try:
        return float(text)
    except ValueError:  # "[N/A]"
        return None


def _optional(read):
    try:
        return read()
    except Exception:  # not supported on this GPU or driver
        return None


def open_sampler():
    """(sampler, None), or (None, why there is nothing to sample)."""
    reasons = []
    for kind in (Nvml, Smi):
        try:
            return kind(), None
        except Exception as error:  # ImportError, NVMLError, RuntimeError: try the next way
            reasons.append(f"{kind.source}: {error}")
    return None, "; ".join(reasons)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--stop", required=True, help="sampling ends when this file exists")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--max-seconds", type=float, default=7200)
    args = parser.parse_args()
    sampler, reason = open_sampler()
    record = {"present": sampler is not None, "reason": reason or "", "interval_s": args.interval, "samples": []}
    record["source"] = sampler.source if sampler else "none"
    try:
        sample_until_stopped(sampler, args, record)
    finally:  # whatever stopped the sampling, the samples taken are written
        with open(args.out, "w") as out:
            json.dump(record, out)


def sample_until_stopped(sampler, args, record):
    """Samples into the record until the stop file appears or the deadline passes. A GPU or driver that fails mid-run
    (NVML or nvidia-smi erroring) ends the sampling, with why, and never the benchmark beside it."""
    deadline = time.time() + args.max_seconds
    while sampler and not os.path.exists(args.stop) and time.time() < deadline:
        started = time.time()
        try:
            gpus = sampler.sample()
        except Exception as error:
            record["stopped"] = f"{sampler.source} failed after {len(record['samples'])} sample(s): {error}"
            return
        record["samples"].append({"t": started, "gpus": gpus})
        time.sleep(max(0.0, args.interval - (time.time() - started)))


if __name__ == "__main__":
    main()
