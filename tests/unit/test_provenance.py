"""Provenance records: bundle commit, controller, recipe, host facts."""

from __future__ import annotations

import subprocess

from station import paths
from station.bench import provenance
from station.bench.records import HostFacts, RunProvenance
from station.recipes import recipe
from tests.conftest import FIXTURES


def test_bundle_commit_is_the_checkout_head() -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=paths.ROOT, capture_output=True, text=True, check=True)
    assert provenance.bundle_commit()["commit"] == head.stdout.strip()


def test_bundle_outside_git_is_unknown(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    assert provenance.bundle_commit() == {"commit": "unknown", "dirty": None}


def test_record_joins_recipe_controller_and_host_facts() -> None:
    smoke = recipe.load("cpu-smoke")
    facts = HostFacts.model_validate_json((FIXTURES / "host" / "facts-local.json").read_text())
    record = provenance.record(smoke, "local", facts)
    assert record["recipe"]["engine"]["image"] == "station.invalid/vllm-cpu:0.32.0"
    assert record["host"] == facts.host.model_dump() and record["engine"]["argv"] == facts.engine.argv
    assert RunProvenance.model_validate(record).engine == facts.engine  # what is written reads back as it was
    assert record["inventory_host"] == "local"
    assert record["controller"]["ansible_core"].startswith("2.")
    assert record["date"].endswith("+00:00")
