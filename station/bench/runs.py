"""Runs on disk: results/<run id>/ holds the raw result, its log, telemetry and result.json with provenance.

results/index.jsonl has one line per run (what `report`, `compare` and the
regression gate query); it is rebuilt from the run folders when missing. Both
are typed (station.bench.records).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from station import paths
from station.bench.records import IndexEntry, RunRecord, Versioned
from station.errors import StationError

Parsed = TypeVar("Parsed", bound=Versioned)


def new_id(host: str, recipe_name: str) -> str:
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{host}-{recipe_name}"


def folder(run_id: str) -> Path:
    path = paths.RESULTS / run_id
    path.mkdir(parents=True, exist_ok=True)
    return path


def index_path() -> Path:
    return paths.RESULTS / "index.jsonl"


def write(record: RunRecord) -> Path:
    path = folder(record.run_id) / "result.json"
    path.write_text(record.model_dump_json(indent=2) + "\n")
    with index_path().open("a") as index:
        index.write(IndexEntry.of(record).model_dump_json() + "\n")
    return path


def _parsed(model: type[Parsed], text: str, where: str) -> Parsed:
    try:
        return model.model_validate_json(text)
    except ValidationError as error:
        raise StationError(
            f"{where} is not a run station can read: {error}",
            "update station if a newer one wrote it; otherwise move the file aside",
        ) from error


def read(run_id: str) -> RunRecord:
    path = paths.RESULTS / run_id / "result.json"
    if not path.is_file():
        raise StationError(f"no run {run_id!r} under {paths.RESULTS}", "list runs with: invoke report --last 10")
    return _parsed(RunRecord, path.read_text(), str(path))


def entry(run_id: str) -> IndexEntry:
    """The run's index line, made from its record."""
    return IndexEntry.of(read(run_id))


def rebuild_index() -> None:
    records = [_parsed(RunRecord, p.read_text(), str(p)) for p in sorted(paths.RESULTS.glob("*/result.json"))]
    index_path().write_text("".join(IndexEntry.of(record).model_dump_json() + "\n" for record in records))


def index() -> list[IndexEntry]:
    """Every run, oldest first."""
    if not index_path().is_file():
        paths.RESULTS.mkdir(parents=True, exist_ok=True)
        rebuild_index()
    where = str(index_path())
    entries = [_parsed(IndexEntry, line, where) for line in index_path().read_text().splitlines() if line.strip()]
    return sorted(entries, key=lambda entry: entry.run_id)


def select(run_ids: list[str] | None = None, last: int = 0, host: str = "", recipe: str = "") -> list[IndexEntry]:
    """Runs by id, or the last N matching host and recipe."""
    entries = index()
    if run_ids:
        by_id = {entry.run_id: entry for entry in entries}
        missing = [run_id for run_id in run_ids if run_id not in by_id]
        if missing:
            raise StationError(
                f"no run {', '.join(missing)} in {index_path()}", "list runs with: invoke report --last 10"
            )
        return [by_id[run_id] for run_id in run_ids]
    matching = [e for e in entries if (not host or e.host == host) and (not recipe or e.recipe == recipe)]
    return matching[-last:] if last else matching
