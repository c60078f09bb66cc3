"""Runs on disk: results/<run id>/ holds the raw result, its log, telemetry and result.json with provenance.

results/index.jsonl has one line per run (what `report`, `compare` and the
regression gate query); it is rebuilt from the run folders when missing.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from station import paths
from station.errors import StationError


def new_id(host: str, recipe_name: str) -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{host}-{recipe_name}"


def folder(run_id: str) -> Path:
    path = paths.RESULTS / run_id
    path.mkdir(parents=True, exist_ok=True)
    return path


def index_path() -> Path:
    return paths.RESULTS / "index.jsonl"


def write(run_id: str, record: dict[str, Any]) -> Path:
    path = folder(run_id) / "result.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    with index_path().open("a") as index:
        index.write(json.dumps(summary(record)) + "\n")
    return path


def read(run_id: str) -> dict[str, Any]:
    path = paths.RESULTS / run_id / "result.json"
    if not path.is_file():
        raise StationError(f"no run {run_id!r} under {paths.RESULTS}", "list runs with: invoke report --last 10")
    return json.loads(path.read_text())


def summary(record: dict[str, Any]) -> dict[str, Any]:
    """The index line of a run: enough to find, sort and compare it."""
    metrics, provenance = record["metrics"], record["provenance"]
    gpu = provenance.get("gpu") or {}
    power = record.get("telemetry") or {}
    return {
        "run_id": record["run_id"],
        "date": provenance["date"],
        "kind": record["kind"],
        "host": provenance["inventory_host"],
        "recipe": provenance["recipe"]["name"],
        "context": record.get("context", {}),
        "vllm_version": provenance["recipe"]["engine"]["vllm_version"],
        "image_id": provenance.get("engine", {}).get("image_id"),
        "commit": provenance["bundle"]["commit"],
        "gpu": f"{gpu['count']}x {gpu['gpus'][0]['name']}" if gpu.get("present") else "none",
        "output_throughput": metrics["output_throughput"],
        "p99_ttft_ms": metrics["p99_ttft_ms"],
        "p99_tpot_ms": metrics.get("p99_tpot_ms"),  # none for agentic runs
        "failed": metrics["failed"],
        # Why the run is not a valid measurement (failed or missing requests or tokens), and whether the client,
        # not the engine, set the pace: such a run is indexed but never a baseline or a cost input.
        "problems": record.get("problems", []),
        "client_bound": bool(metrics.get("client_bound")),
        "profile": record.get("profile"),
        "avg_power_w": power.get("avg_power_w"),
        "output_tokens_per_joule": power.get("output_tokens_per_joule"),
    }


def invalid(entry: dict[str, Any]) -> str | None:
    """Why an indexed run is no measurement of its profile (what it was); None when it is one."""
    if entry.get("problems"):
        return f"not a valid measurement: {'; '.join(entry['problems'])}"
    if entry["failed"]:
        return f"not a valid measurement: {entry['failed']} failed request(s)"
    if entry.get("client_bound"):
        return "paced by its client, which could not reach the profile's concurrency"
    return None


def rebuild_index() -> None:
    lines = [json.dumps(summary(json.loads(p.read_text()))) for p in sorted(paths.RESULTS.glob("*/result.json"))]
    index_path().write_text("".join(line + "\n" for line in lines))


def index() -> list[dict[str, Any]]:
    """Every run, oldest first."""
    if not index_path().is_file():
        paths.RESULTS.mkdir(parents=True, exist_ok=True)
        rebuild_index()
    entries = [json.loads(line) for line in index_path().read_text().splitlines() if line.strip()]
    return sorted(entries, key=lambda entry: entry["run_id"])


def select(run_ids: list[str] | None = None, last: int = 0, host: str = "", recipe: str = "") -> list[dict[str, Any]]:
    """Runs by id, or the last N matching host and recipe."""
    entries = index()
    if run_ids:
        by_id = {entry["run_id"]: entry for entry in entries}
        missing = [run_id for run_id in run_ids if run_id not in by_id]
        if missing:
            raise StationError(
                f"no run {', '.join(missing)} in {index_path()}", "list runs with: invoke report --last 10"
            )
        return [by_id[run_id] for run_id in run_ids]
    matching = [e for e in entries if (not host or e["host"] == host) and (not recipe or e["recipe"] == recipe)]
    return matching[-last:] if last else matching
