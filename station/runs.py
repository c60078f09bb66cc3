"""Runs on disk: results/<run id>/ holds the raw result, its log, and result.json with provenance."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from station import paths


def new_id(host: str, recipe_name: str) -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{host}-{recipe_name}"


def folder(run_id: str) -> Path:
    path = paths.RESULTS / run_id
    path.mkdir(parents=True, exist_ok=True)
    return path


def write(run_id: str, record: dict[str, Any]) -> Path:
    path = folder(run_id) / "result.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path


def read(run_id: str) -> dict[str, Any]:
    return json.loads((paths.RESULTS / run_id / "result.json").read_text())
