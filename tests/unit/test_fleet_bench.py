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


def test_the_benchmark_reaches_the_fleets_router_on_its_hosts_network_and_checks_it_routes_as_the_recipe_says() -> None:
    balanced = recipe.load("cpu-smoke").model_copy(update={"router": recipe.Router(balance_abs_threshold=4)})
    extra = fleet.bench_vars(fleet.Fleet("sim", ["sim", "sim2"]), balanced)
    assert extra["vllm_bench_target_url"] == "http://station-router:8000"
    assert extra["vllm_bench_router"] == {
        "container": "station-router",
        "routing": "--policy=cache_aware --balance-abs-threshold=4",
    }


def test_the_fleet_table_shows_each_hosts_share_the_fleets_hit_rate_and_the_retries() -> None:
    shares = [
        HostShare(host="sim", requests=300, output_tokens=150_000, share=0.6, prefix_cache_hit_rate=0.25),
        HostShare(host="sim2", requests=200, output_tokens=100_000, share=0.4, prefix_cache_hit_rate=None),
    ]
    figures = FleetFigures(
        router="sim", policy="round_robin", routing=["--policy=round_robin"], shares=shares, retries=3,
        prefix_cache_hit_rate=0.125,
    )  # fmt: skip
    console = Console(record=True, width=160)
    console.print(tables.fleet(figures))
    shown = console.export_text()
    assert "through sim's router (--policy=round_robin)" in shown and "router retries: 3" in shown
    assert "60.0%" in shown and "25.0%" in shown and "100,000" in shown
    assert "Fleet" in shown and "500" in shown and "250,000" in shown and "12.5%" in shown


def test_an_agentic_fleet_runs_engine_figures_are_every_hosts() -> None:
    shares = [
        HostShare(host=host, requests=8, output_tokens=tokens, share=0.5, prefix_cache_hit_rate=None)
        for host, tokens in (("sim", 300.0), ("sim2", 100.0))
    ]
    served = FleetFigures(router="sim", policy="cache_aware", shares=shares, retries=0, prefix_cache_hit_rate=0.75)
    assert fleet.engine_figures(served) == {"prefix_cache_hit_rate": 0.75, "engine_generation_tokens": 400.0}
