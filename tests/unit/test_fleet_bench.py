"""A fleet named on the command line, measured as one: which --host names one, and the load it gets."""

from __future__ import annotations

import pytest
from rich.console import Console

from station.bench import fleet
from station.bench.records import FleetFigures, HostShare
from station.recipes import profiles, recipe
from station.reports import tables


@pytest.mark.parametrize("spec", ["sims", "sim2,sim", "sim,sim2"])
def test_a_group_or_list_of_a_fleets_hosts_is_its_fleet_with_its_router_first(spec: str) -> None:
    assert fleet.of(spec) == fleet.Fleet("sim", ["sim", "sim2"])


@pytest.mark.parametrize("spec", ["sim", "sim2", "local", "local,sim", "local,sim,sim2"])
def test_one_host_or_hosts_of_no_single_fleet_are_no_fleet(spec: str) -> None:
    assert fleet.of(spec) is None


def test_the_fleets_load_is_the_recipes_for_each_of_its_hosts() -> None:
    smoke = recipe.load("cpu-smoke")
    scaled = fleet.scaled(smoke, fleet.Fleet("sim", ["sim", "sim2"])).bench
    assert (scaled.concurrency, scaled.num_prompts, scaled.warmups) == (
        2 * smoke.bench.concurrency,
        2 * smoke.bench.num_prompts,
        2 * smoke.bench.warmups,
    )
    assert scaled.input_len == smoke.bench.input_len and scaled.output_len == smoke.bench.output_len
    assert fleet.scaled(smoke, None) == smoke
    agentic = profiles.load("agentic-cpu")
    assert fleet.scaled_profile(agentic, fleet.Fleet("sim", ["sim", "sim2"])).sessions == 2 * agentic.sessions
    assert fleet.scaled_profile(agentic, None) == agentic


def test_the_benchmark_reaches_the_fleets_router_on_its_hosts_network() -> None:
    assert fleet.router_url(fleet.Fleet("sim", ["sim", "sim2"])) == "http://station-router:8000"


def test_the_fleet_table_shows_each_hosts_share_and_the_retries() -> None:
    shares = [
        HostShare(host="sim", requests=300, output_tokens=150_000, share=0.6, prefix_cache_hit_rate=0.25),
        HostShare(host="sim2", requests=200, output_tokens=100_000, share=0.4, prefix_cache_hit_rate=None),
    ]
    figures = FleetFigures(router="sim", policy="cache_aware", shares=shares, retries=3)
    console = Console(record=True, width=160)
    console.print(tables.fleet(figures))
    shown = console.export_text()
    assert "through sim's router (cache_aware)" in shown and "router retries: 3" in shown
    assert "60.0%" in shown and "25.0%" in shown and "100,000" in shown
