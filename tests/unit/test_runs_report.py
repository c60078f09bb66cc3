"""Stored runs: the index, selection, reports with charts, comparisons, tunnel commands — from files, no Docker."""

from __future__ import annotations

import json

import pytest

from station import paths
from station.bench import runs
from station.bench.agentic import AgenticMetrics
from station.bench.records import HostMachine
from station.deploy import tunnel
from station.errors import StationError
from station.reports import runs as run_report
from tests.conftest import stored_run as store
from tests.conftest import this_machine


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    monkeypatch.setattr(run_report, "REPORTS", tmp_path / "reports")
    return tmp_path


def test_every_run_is_indexed_and_selectable(results) -> None:
    store("20261129T100000Z-local-cpu-smoke", 1000)
    store("20261129T110000Z-local-cpu-smoke", 1100, power=300)
    entries = runs.select(last=1)
    assert [e.run_id for e in entries] == ["20261129T110000Z-local-cpu-smoke"]
    assert entries[0].gpu == "1x NVIDIA H200" and entries[0].avg_power_w == 300
    assert runs.select(host="sim") == []
    with pytest.raises(StationError, match="no run nope"):
        runs.select(["nope"])


def test_the_index_is_rebuilt_from_the_run_folders(results) -> None:
    store("20261129T100000Z-local-cpu-smoke", 1000)
    runs.index_path().unlink()
    assert [e.output_throughput for e in runs.index()] == [1000]


def test_report_has_a_row_per_run_and_its_charts(results) -> None:
    store("20261129T100000Z-local-cpu-smoke", 1000)
    store("20261129T110000Z-local-cpu-smoke", 1100, power=300)
    report = run_report.write_report(runs.select(last=2))
    text = report.read_text()
    assert text.count("| [2026") == 2
    assert "| 1,100 |" in text and "300 W, 2.50 tok/J" in text and "no GPU telemetry" in text
    for chart in ("throughput.png", "latency.png", "power.png"):
        assert (report.parent / chart).read_bytes()[:4] == b"\x89PNG"
        assert f"]({chart})" in text


def test_the_index_and_the_report_say_which_runs_are_no_measurement(results) -> None:
    store("20261129T100000Z-local-cpu-smoke", 1000, problems=("60 requests completed, 64 were sent",))
    store("20261129T110000Z-local-cpu-smoke", 1100)
    invalid, valid = runs.select(last=2)
    assert valid.invalid is None
    assert invalid.invalid == "not a valid measurement: 60 requests completed, 64 were sent"
    text = run_report.write_report([invalid, valid]).read_text()
    assert "| no: not a valid measurement: 60 requests completed, 64 were sent |" in text
    assert text.count("| yes |") == 1


def test_report_without_runs_says_so(results) -> None:
    with pytest.raises(StationError, match="no runs to report"):
        run_report.write_report([])


def test_compare_gives_ratios_b_over_a(results) -> None:
    store("a", 1000)
    store("b", 1500)
    rows = {row[0]: row for row in run_report.comparison("a", "b")}
    assert rows["Output tok/s"] == ("Output tok/s", "1,000", "1,500", "1.50x")
    assert rows["Failed"][3] == "-"  # 0 failed in both: no ratio
    path = run_report.write_comparison("a", "b")
    assert "| Output tok/s | 1,000 | 1,500 | 1.50x |" in path.read_text()


def test_compare_names_the_machine_of_each_run_and_says_when_they_differ(results) -> None:
    store("a", 1000)
    store("b", 1500)
    epyc = HostMachine(name="local", cpu="AMD EPYC 9454P", cpu_count=2, cpu_flags=["avx2", "avx512f", "avx512_bf16"])
    store("c", 1500, machine=epyc)
    same = {row[0]: row for row in run_report.comparison("a", "b")}["Machine"]
    assert same[1] == same[2] == this_machine().cpu_label and same[3] == "the same"
    other = {row[0]: row for row in run_report.comparison("a", "c")}["Machine"]
    assert other[2] == "AMD EPYC 9454P, 2 cores, avx2 avx512f avx512_bf16"
    assert other[3] == "not the same: the ratios measure the machines too"


def test_tunnel_forwards_every_service_with_inventory_overrides_from_loopback_only() -> None:
    connection = {
        "connection": "ssh",
        "address": "dgx01.example",
        "user": "ops",
        "port": 22,
        "private_key": "/keys/id",
        "ssh_args": "-o StrictHostKeyChecking=yes",
        "settings": {"vllm_router_port": 8001, "grafana_bind_address": "0.0.0.0"},
    }
    argv = tunnel.ssh_argv(connection)
    assert argv[:2] == ["ssh", "-N"] and argv[-1] == "ops@dgx01.example"
    assert argv[argv.index("-i") : argv.index("-i") + 2] == ["-i", "/keys/id"]
    forwards = [argv[i + 1] for i, part in enumerate(argv) if part == "-L"]
    assert forwards == [
        "127.0.0.1:8001:127.0.0.1:8001",
        "127.0.0.1:8100:127.0.0.1:8100",
        "127.0.0.1:8101:127.0.0.1:8101",
        "127.0.0.1:9090:127.0.0.1:9090",
        "127.0.0.1:3000:127.0.0.1:3000",
        "127.0.0.1:9100:127.0.0.1:9100",
        "127.0.0.1:9400:127.0.0.1:9400",
    ]
    assert json.dumps(argv)  # plain strings only


def test_tunnel_can_forward_one_service_to_another_local_port() -> None:
    connection = {"address": "dgx01", "user": "", "port": 22, "private_key": "", "ssh_args": "", "settings": {}}
    chosen = [tunnel.Forward("API (router)", 41000, "127.0.0.1", 8000)]
    argv = tunnel.ssh_argv(connection, chosen)
    assert [argv[i + 1] for i, part in enumerate(argv) if part == "-L"] == ["127.0.0.1:41000:127.0.0.1:8000"]


def test_a_report_with_an_agentic_run_shows_it_without_tpot(results) -> None:
    store("20261129T100000Z-local-cpu-smoke", 1000)
    agentic = store("20261129T110000Z-local-cpu-smoke-agentic-cpu", 600)
    turns = AgenticMetrics(
        sessions=2,
        sessions_completed=2,
        sessions_failed=0,
        requests=6,
        failed=0,
        duration_s=10.0,
        output_throughput=600,
        per_session_tok_s_p10=280.0,
        per_session_tok_s_p50=300.0,
        turn_latency_p50_ms=500.0,
        turn_latency_p99_ms=900.0,
        p99_ttft_ms=280.0,
        ttft_p99_by_turn_ms=[300.0, 200.0, 150.0],
        achieved_concurrency=2.0,
        expected_concurrency=2.0,
        client_bound=False,
        prefix_cache_hit_rate=0.8,
        engine_generation_tokens=6000,
    )
    # rewritten as an agentic record: no TPOT, turns instead
    runs.write(agentic.model_copy(update={"kind": "agentic", "metrics": turns, "telemetry": None}))
    (results / "index.jsonl").unlink()  # rebuilt from the run folders
    path = run_report.write_report(runs.select(last=2))
    row = next(line for line in path.read_text().splitlines() if "agentic-cpu" in line)
    assert "| 600 | 280 | - |" in row
    assert (path.parent / "latency.png").is_file()  # drawn from the random-profile run alone
