"""A fleet measured as one (`smoke-bench --host FLEET`): the run goes to the fleet's router, on its router's host,
with the recipe's profile scaled to the fleet's size, and each host's share of it is read from its engine's own
counters on the fleet's Prometheus (the router host's, which scrapes every host of the fleet), with the router's
retries. A fleet is a group, or a list of hosts, whose hosts all name one of them as station_fleet_router."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from rich.console import Console

from station.bench import traffic
from station.bench.records import FleetFigures, HostShare
from station.deploy import inventory, tunnel
from station.recipes.profiles import AgenticProfile
from station.recipes.recipe import Recipe


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


def router_url(fleet: Fleet) -> str:
    """The fleet's router as a container on its host's station network reaches it (the benchmark's)."""
    name = inventory.setting(inventory.host_vars(fleet.router), "vllm_router", "vllm_router_container_name")
    return f"http://{name}:{inventory.role_var('vllm_router', '_vllm_router_api_port')}"


def figures(fleet: Fleet, started: float, console: Console) -> FleetFigures:
    """Each host's share of what the fleet served since `started` (Unix time), once the fleet's Prometheus has
    scraped every engine after the run."""
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
    tokens = sum(host["output_tokens"] for host in served.values()) or 1.0
    return FleetFigures(
        router=fleet.router,
        policy=inventory.setting(settings, "vllm_router", "vllm_router_policy"),
        shares=[
            HostShare(host=host, share=figures["output_tokens"] / tokens, **figures) for host, figures in served.items()
        ],
        retries=retries,
    )


def _served(prometheus: traffic.Prometheus, window: str) -> dict[str, float | None]:
    """What one host's engine served in the window: requests, output tokens and its prefix-cache hit rate."""
    return {
        "requests": prometheus.scalar(prometheus.counted("vllm:request_success_total", window)) or 0.0,
        "output_tokens": prometheus.scalar(prometheus.counted("vllm:generation_tokens_total", window)) or 0.0,
        "prefix_cache_hit_rate": prometheus.ratio(
            "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", window
        ),
    }
