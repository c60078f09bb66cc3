"""A run's record and index line: typed, written and read by the same models, old files read, newer refused."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from station import paths
from station.bench import runs
from station.bench.bench_result import BenchResult
from station.bench.records import SCHEMA_VERSION, EngineFacts, HostFacts, IndexEntry
from station.errors import StationError
from tests.conftest import FIXTURES, stored_run

RUN = "20261129T100000Z-local-cpu-smoke"


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    return tmp_path


def test_a_record_reads_back_as_it_was_written_and_indexes_from_itself(results) -> None:
    written = stored_run(RUN, 1234.5, power=300)
    read = runs.read(RUN)
    assert read == written and isinstance(read.metrics, BenchResult)
    assert runs.index() == [IndexEntry.of(read)]
    assert read.schema_version == SCHEMA_VERSION == runs.index()[0].schema_version


def test_the_client_s_pace_is_recorded_with_the_figures(results) -> None:
    record = json.loads((results / stored_run(RUN).run_id / "result.json").read_text())
    assert {"achieved_concurrency", "client_bound"} <= record["metrics"].keys()  # readable without the raw file


def test_a_record_from_before_schema_versions_reads_as_version_1(results) -> None:
    """As station wrote them before the field: no schema_version, and an agentic replay's telemetry an empty {}."""
    path = results / stored_run(RUN).run_id / "result.json"
    old = json.loads(path.read_text())
    del old["schema_version"]
    old["telemetry"] = {}
    path.write_text(json.dumps(old))
    runs.index_path().unlink()
    read = runs.read(RUN)
    assert read.schema_version == 1 and read.telemetry is None
    assert runs.index()[0].avg_power_w is None


@pytest.mark.parametrize("file", ["result.json", "index.jsonl"])
def test_a_file_from_a_newer_station_is_refused_naming_both_versions(results, file: str) -> None:
    stored_run(RUN)
    path = results / RUN / file if file == "result.json" else runs.index_path()
    path.write_text(path.read_text().replace(f'"schema_version": {SCHEMA_VERSION}', '"schema_version": 99'))
    path.write_text(path.read_text().replace(f'"schema_version":{SCHEMA_VERSION}', '"schema_version":99'))
    with pytest.raises(StationError) as refused:
        runs.read(RUN) if file == "result.json" else runs.index()
    assert f"{path} is not a run station can read" in refused.value.problem
    assert f"schema version 99 was written by a newer station; this one reads up to {SCHEMA_VERSION}" in str(
        refused.value
    )
    assert "update station" in refused.value.hint


HOST_FACTS = FIXTURES / "host" / "facts-local.json"


def test_the_facts_the_bench_role_writes_read_typed() -> None:
    """A file the vllm_bench role's `facts` entry point wrote on this machine (every smoke-bench in the integration
    tests reads the benchmark's own, which adds the client's container, the same way)."""
    facts = HostFacts.model_validate_json(HOST_FACTS.read_text())
    assert facts.host.name == "local" and facts.host.cpu_count > 0 and facts.host.docker_version
    assert facts.engine.image_id.startswith("sha256:")
    assert facts.engine.argv[:2] == ["--model", "/opt/station/models/tiny-llama"]
    assert not facts.gpu.present and facts.gpu.label == "none" and facts.bench is None


def test_a_fact_the_role_adds_without_the_model_is_refused() -> None:
    data = json.loads(HOST_FACTS.read_text()) | {"firmware": "1.2"}
    with pytest.raises(ValidationError, match="firmware"):
        HostFacts.model_validate(data)


def test_a_record_whose_engine_had_no_labels_reads() -> None:
    """Docker reports an image or a container without labels as null, as records before typed facts kept it."""
    engine = EngineFacts.model_validate(
        {"image_id": "sha256:abc", "labels": None, "image_labels": None, "gpu_uuid": "x"}
    )
    assert engine.labels == {} and engine.image_labels == {} and engine.model_extra == {"gpu_uuid": "x"}
