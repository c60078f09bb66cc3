"""A fleet measured as one (`smoke-bench --host FLEET`): the run goes to the fleet's router, on its router's host,
with the recipe's profile scaled to the fleet's size, and each host's share of it is read from its engine's own
counters on the fleet's Prometheus (the router host's, which scrapes every host of the fleet), with the router's
retries. A fleet is a group, or a list of hosts, whose hosts all name one of them as station_fleet_router."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from rich.console import Console

from station.bench import traffic
from station.bench.records import FleetFigures, HostShare
from station.deploy import inventory, tunnel
from station.recipes import render
from station.recipes.profiles import AgenticProfile
from station.recipes.recipe import Recipe

# What each host's engine served, as HostShare names it, and the engine's counter it is read from
SERVED_COUNTERS = {
    "requests": "vllm:request_success_total",
    "output_tokens": "vllm:generation_tokens_total",
    "prefix_cache_hits": "vllm:prefix_cache_hits_total",
    "prefix_cache_queries": "vllm:prefix_cache_queries_total",
}


@dataclass(frozen=True)
class Fleet:
    router: str  # the host whose router serves the fleet
    hosts: list[str]  # the router's first


def of(spec: str) -> Fleet | None:
    """The fleet a --host names, when it names more than one host and they all share a router among them."""
    hosts = inventory.targets(spec)
    routers = {inventory.host_vars(host).get("station_fleet_router") for host in hosts}
    if len(hosts) < 2 or len(routers) != 1:
        return None
    (router,) = routers
    return Fleet(router, [router, *(host for host in hosts if host != router)]) if router in hosts else None


def scaled(recipe: Recipe, fleet: Fleet | None) -> Recipe:
    """The recipe with its benchmark's concurrency, prompts and warm-ups multiplied by the fleet's size: each host
    gets the load the recipe gives one (as it is, for one host)."""
    if not fleet:
        return recipe
    size = len(fleet.hosts)
    bench = recipe.bench
    more = {"concurrency": bench.concurrency * size, "num_prompts": bench.num_prompts * size}
    return recipe.model_copy(update={"bench": bench.model_copy(update=more | {"warmups": bench.warmups * size})})


def scaled_profile(profile: AgenticProfile, fleet: Fleet | None) -> AgenticProfile:
    """An agentic profile with as many sessions for each host of the fleet as it has (as it is, for one host)."""
    return profile.model_copy(update={"sessions": profile.sessions * len(fleet.hosts)}) if fleet else profile


def bench_vars(fleet: Fleet, recipe: Recipe) -> dict[str, Any]:
    """The bench role's variables for a run through the fleet's router: its URL as a container on the router
    host's station network reaches it, and the routing the router must run (the recipe's)."""
    name = inventory.setting(inventory.host_vars(fleet.router), "vllm_router", "vllm_router_container_name")
    return {
        "vllm_bench_target_url": f"http://{name}:{inventory.role_var('vllm_router', '_vllm_router_api_port')}",
        "vllm_bench_router": {"container": name, "routing": " ".join(render.routing_args(recipe))},
    }


def figures(fleet: Fleet, recipe: Recipe, started: float, console: Console) -> FleetFigures:
    """Each host's share of what the fleet served since `started` (Unix time), once the fleet's Prometheus has
    scraped every engine after the run, routed as `recipe` says (the bench role checked it)."""
    settings = inventory.host_vars(fleet.router)
    scrape_s = traffic.seconds(inventory.setting(settings, "prometheus", "prometheus_scrape_interval"))
    time.sleep(2 * scrape_s)  # a scrape of every target after the run's last request
    at = time.time()
    window = f"{math.ceil(at - started) + scrape_s}s"
    with tunnel.urls(fleet.router, console, (tunnel.PROMETHEUS,)) as found:
        served = {
            host: _served(traffic.Prometheus(found[tunnel.PROMETHEUS], host, at, scrape_s), window)
            for host in fleet.hosts
        }
        router = traffic.Prometheus(found[tunnel.PROMETHEUS], fleet.router, at, scrape_s)
        retries = router.scalar(router.counted("vllm_router_retries_total", window)) or 0.0
    total = {key: sum(counts[key] for counts in served.values()) for key in SERVED_COUNTERS}
    return FleetFigures(
        router=fleet.router,
        policy=recipe.router.policy,
        routing=render.routing_args(recipe),
        shares=[
            HostShare(
                host=host,
                share=counts["output_tokens"] / (total["output_tokens"] or 1.0),
                prefix_cache_hit_rate=_hit_rate(counts),
                **counts,
            )
            for host, counts in served.items()
        ],
        retries=retries,
        prefix_cache_hit_rate=_hit_rate(total),
    )


def engine_figures(served: FleetFigures) -> dict[str, float | None]:
    """An agentic run's engine figures (AgenticMetrics) for the whole fleet: its prefix-cache hit rate and the
    tokens every host's engine generated."""
    return {
        "prefix_cache_hit_rate": served.prefix_cache_hit_rate,
        "engine_generation_tokens": sum(share.output_tokens for share in served.shares),
    }


def _hit_rate(counts: dict[str, float]) -> float | None:
    """The share of the prompt tokens looked up that the prefix cache held; None where none were looked up."""
    lookups = counts["prefix_cache_queries"]
    return counts["prefix_cache_hits"] / lookups if lookups else None


def _served(prometheus: traffic.Prometheus, window: str) -> dict[str, float]:
    """What one host's engine served in the window: requests, output tokens, prefix-cache hits and lookups."""
    return {
        key: prometheus.scalar(prometheus.counted(metric, window)) or 0.0 for key, metric in SERVED_COUNTERS.items()
    }
