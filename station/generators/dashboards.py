"""Grafana dashboards as code: `python -m station.generators.dashboards` writes monitoring/grafana/dashboards/.

Panels are data (title, queries, unit), so every dashboard gets the same
datasource, host variable and benchmark annotations, and tests can read every
query back out of the JSON. The committed JSON must equal what this module
generates (tests/unit/test_monitoring_files.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import count
from typing import Any

import yaml

from station import paths

DASHBOARDS = paths.ROOT / "monitoring" / "grafana" / "dashboards"
PRICES = paths.ROOT / "monitoring" / "grafana" / "prices.yml"
DATASOURCE = {"type": "prometheus", "uid": "station-prometheus"}  # provisioned in datasources/station.yml
HOST = 'host=~"$host"'
RATE = "$__rate_interval"


@dataclass(frozen=True)
class Panel:
    title: str
    queries: tuple[tuple[str, str], ...]  # (PromQL, legend)
    unit: str = "short"
    description: str = ""
    width: int = 12
    no_value: str = ""  # what an empty panel says instead of "No data", for series exported only once something happens


@dataclass(frozen=True)
class Row:
    """A row header: the panels after it, up to the next, are its own."""

    title: str


def quantiles(metric: str) -> tuple[tuple[str, str], ...]:
    """p50, p90 and p99 of a vLLM histogram, per host."""
    return tuple(
        (f"histogram_quantile({q}, sum by (host, le) (rate({metric}_bucket{{{HOST}}}[{RATE}])))", f"p{int(q * 100)}")
        for q in (0.5, 0.9, 0.99)
    )


def ratio(numerator: str, denominator: str) -> str:
    return (
        f"sum by (host) (rate({numerator}{{{HOST}}}[{RATE}])) / sum by (host) (rate({denominator}{{{HOST}}}[{RATE}]))"
    )


def dcgm(field: str, legend: str = "GPU {{gpu}}") -> tuple[str, str]:
    return (f"{field}{{{HOST}}}", legend)


# Series exported only once an event occurs: an empty panel there means none yet, not a broken exporter. vllm-router
# counts retries from the first; dcgm-exporter 4.5.3-4.8.2 exports the XID and clock-event-reason series only after
# one (NVIDIA/dcgm-exporter issues 700 and 646).
EVENT_ONLY = "none reported yet"

OUTPUT_TOKENS = f"rate(vllm:generation_tokens_total{{{HOST}}}[{RATE}])"

TOKENS_PER_HOUR_M = f"sum by (host) (rate(vllm:generation_tokens_total{{{HOST}}}[5m])) * 3600 / 1e6"

SERVING = [
    Panel(
        "Output tokens/s",
        ((f"sum by (host, model_name) (rate(vllm:generation_tokens_total{{{HOST}}}[{RATE}]))", "{{model_name}}"),),
        "tps",
    ),
    Panel(
        "Prompt tokens/s",
        ((f"sum by (host, model_name) (rate(vllm:prompt_tokens_total{{{HOST}}}[{RATE}]))", "{{model_name}}"),),
        "tps",
    ),
    Panel(
        "Requests running and waiting",
        (
            (f"sum by (host) (vllm:num_requests_running{{{HOST}}})", "running"),
            (f"sum by (host) (vllm:num_requests_waiting{{{HOST}}})", "waiting"),
        ),
    ),
    Panel("Time to first token", quantiles("vllm:time_to_first_token_seconds"), "s"),
    Panel("Inter-token latency", quantiles("vllm:inter_token_latency_seconds"), "s"),
    Panel("End-to-end request latency", quantiles("vllm:e2e_request_latency_seconds"), "s"),
    Panel(
        "KV cache usage",
        ((f"max by (host) (vllm:kv_cache_usage_perc{{{HOST}}})", "used"),),
        "percentunit",
        "Share of the KV cache blocks in use; near 1, requests get preempted.",
    ),
    Panel(
        "Preemptions/s",
        ((f"sum by (host) (rate(vllm:num_preemptions_total{{{HOST}}}[{RATE}]))", "preemptions"),),
        "ops",
    ),
    Panel(
        "MTP acceptance rate",
        ((ratio("vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_draft_tokens_total"), "accepted"),),
        "percentunit",
        "Share of draft tokens the model accepted (speculative decoding with MTP).",
    ),
    Panel(
        "MTP mean acceptance length",
        (
            (
                f"1 + {ratio('vllm:spec_decode_num_accepted_tokens_total', 'vllm:spec_decode_num_drafts_total')}",
                "tokens",
            ),
        ),
        "short",
        "Tokens produced per forward pass: 1 plus accepted draft tokens per draft.",
    ),
    Panel(
        "Prefix cache hit rate",
        ((ratio("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"), "hits"),),
        "percentunit",
    ),
    Panel("Queue time", quantiles("vllm:request_queue_time_seconds"), "s"),
    Panel(
        "Router: requests/s by route",
        ((f"sum by (host, route) (rate(vllm_router_requests_total{{{HOST}}}[{RATE}]))", "{{route}}"),),
        "reqps",
        "What clients send to vLLM's router, the API's front door.",
    ),
    Panel(
        "Router: requests/s per engine",
        ((f"sum by (host, worker) (rate(vllm_router_processed_requests_total{{{HOST}}}[{RATE}]))", "{{worker}}"),),
        "reqps",
        "How the router's policy spreads requests over the engines behind it.",
    ),
    Panel(
        "Router: engines in rotation",
        (
            (f"sum by (host) (vllm_router_active_workers{{{HOST}}})", "in rotation"),
            (f"sum by (host) (vllm_router_worker_health{{{HOST}}})", "passing health checks"),
        ),
        "short",
        "Engines the router sends requests to; one failing its health checks leaves the rotation.",
    ),
    Row("Fleet: the hosts selected, as one"),
    Panel(
        "Fleet: output tokens/s",
        ((f"sum({OUTPUT_TOKENS})", "all hosts selected"),),
        "tps",
        "What the fleet serves: every selected host's engine, added up (a fleet's Prometheus scrapes them all).",
    ),
    Panel(
        "Fleet: each host's share of output tokens",
        ((f"sum by (host) ({OUTPUT_TOKENS}) / scalar(sum({OUTPUT_TOKENS}))", "{{host}}"),),
        "percentunit",
        "How the router's policy spreads the work; a host at 0 is out of the rotation (drained, or failing).",
    ),
    Panel(
        "Router: requests in flight per engine",
        ((f"sum by (host, worker) (vllm_router_running_requests{{{HOST}}})", "{{worker}}"),),
        "short",
        "The router's own count of what each engine is serving, the load its cache-aware policy balances.",
    ),
    Panel(
        "Router: retries/s",
        ((f"sum by (host, route) (rate(vllm_router_retries_total{{{HOST}}}[{RATE}]))", "{{route}}"),),
        "ops",
        "Requests the router sent again after an engine failed them (a lost host's requests in flight).",
        no_value=EVENT_ONLY,
    ),
]

GPU = [
    Panel("GPU utilisation", (dcgm("DCGM_FI_DEV_GPU_UTIL"),), "percent"),
    Panel(
        "SM activity and occupancy",
        (dcgm("DCGM_FI_PROF_SM_ACTIVE", "active {{gpu}}"), dcgm("DCGM_FI_PROF_SM_OCCUPANCY", "occupancy {{gpu}}")),
        "percentunit",
    ),
    Panel(
        "Tensor and DRAM activity",
        (dcgm("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "tensor {{gpu}}"), dcgm("DCGM_FI_PROF_DRAM_ACTIVE", "DRAM {{gpu}}")),
        "percentunit",
    ),
    Panel(
        "Memory used and free",
        (dcgm("DCGM_FI_DEV_FB_USED", "used {{gpu}}"), dcgm("DCGM_FI_DEV_FB_FREE", "free {{gpu}}")),
        "decmbytes",
    ),
    Panel("Power", (dcgm("DCGM_FI_DEV_POWER_USAGE"), dcgm("DCGM_FI_DEV_POWER_MGMT_LIMIT", "limit {{gpu}}")), "watt"),
    Panel("Temperature", (dcgm("DCGM_FI_DEV_GPU_TEMP"), dcgm("DCGM_FI_DEV_MEMORY_TEMP", "memory {{gpu}}")), "celsius"),
    Panel("SM clock", (dcgm("DCGM_FI_DEV_SM_CLOCK"),), "MHz"),
    Panel(
        "Throttling (clock event reasons)",
        (dcgm("DCGM_FI_DEV_CLOCKS_EVENT_REASONS"),),
        "short",
        "Bitmask: 0x4 power cap, 0x8 HW slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80 power brake.",
        no_value=EVENT_ONLY,
    ),
    Panel(
        "XID errors",
        (dcgm("DCGM_FI_DEV_XID_ERRORS"),),
        "short",
        "Last XID error code per GPU; 0 is none.",
        no_value=EVENT_ONLY,
    ),
]

EFFICIENCY = [
    Panel(
        "Output tokens per joule",
        ((f"host:station_output_tokens_per_joule:ratio_rate1m{{{HOST}}}", "tokens/J"),),
        "short",
        "Output tokens/s over the GPUs' power draw (W = J/s).",
    ),
    Panel(
        "Cost per million output tokens (GPU hour price)",
        ((f"$gpu_hour_price / ({TOKENS_PER_HOUR_M})", "self-hosted"), ("vector($api_price_per_mtok)", "API")),
        "currencyUSD",
        "At the current throughput, from the gpu_hour_price and api_price_per_mtok variables (prices.yml).",
    ),
    Panel(
        "Energy cost per million output tokens",
        (
            (
                f"sum by (host) (DCGM_FI_DEV_POWER_USAGE{{{HOST}}}) / 1000 * $power_price_kwh / ({TOKENS_PER_HOUR_M})",
                "energy",
            ),
        ),
        "currencyUSD",
        "GPU power only, at power_price_kwh.",
    ),
]


def no_value(panel: Panel) -> dict[str, str]:
    return {"noValue": panel.no_value} if panel.no_value else {}


def row_json(row: Row, panel_id: int, y: int) -> dict[str, Any]:
    return {
        "id": panel_id,
        "type": "row",
        "title": row.title,
        "collapsed": False,
        "gridPos": {"h": 1, "w": 24, "x": 0, "y": y},
    }


def panels_json(panels: list[Panel | Row]) -> list[dict[str, Any]]:
    ids = count(1)
    rendered, x, y = [], 0, 0
    for panel in panels:
        if isinstance(panel, Row):
            y = y + 8 if x else y
            rendered.append(row_json(panel, next(ids), y))
            x, y = 0, y + 1
            continue
        if x + panel.width > 24:
            x, y = 0, y + 8
        rendered.append(
            {
                "id": next(ids),
                "type": "timeseries",
                "title": panel.title,
                "description": panel.description,
                "datasource": DATASOURCE,
                "gridPos": {"h": 8, "w": panel.width, "x": x, "y": y},
                "fieldConfig": {"defaults": {"unit": panel.unit} | no_value(panel), "overrides": []},
                "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
                "targets": [
                    {"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": expr, "legendFormat": legend}
                    for i, (expr, legend) in enumerate(panel.queries)
                ],
            }
        )
        x += panel.width
    return rendered


def variables(prices: dict[str, float]) -> list[dict[str, Any]]:
    host = {
        "name": "host",
        "label": "Host",
        "type": "query",
        "datasource": DATASOURCE,
        "query": {"query": "label_values(up, host)", "refId": "host"},
        "definition": "label_values(up, host)",
        "includeAll": True,
        "multi": True,
        "current": {"text": "All", "value": "$__all"},
        "refresh": 2,
    }
    textboxes = [
        {"name": name, "label": name, "type": "textbox", "query": str(value), "current": {"value": str(value)}}
        for name, value in prices.items()
    ]
    return [host, *textboxes]


BENCHMARK_ANNOTATION = {
    "name": "Benchmark runs",
    "datasource": DATASOURCE,
    "enable": True,
    "iconColor": "orange",
    "expr": f"station_benchmark_running{{{HOST}}} == 1",
    "step": "5s",
    "titleFormat": "benchmark {{run_id}}",
    "textFormat": "recipe {{recipe}}",
    "useValueForTime": False,
}


def dashboard(uid: str, title: str, panels: list[Panel | Row], prices: dict[str, float]) -> dict[str, Any]:
    return {
        "uid": uid,
        "title": title,
        "tags": ["station"],
        "editable": False,
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "10s",
        "templating": {"list": variables(prices)},
        "annotations": {"list": [BENCHMARK_ANNOTATION]},
        "panels": panels_json(panels),
    }


def generate() -> dict[str, dict[str, Any]]:
    """File name → dashboard JSON."""
    prices = yaml.safe_load(PRICES.read_text())
    return {
        "serving.json": dashboard("station-serving", "station / Serving", SERVING, {}),
        "gpu.json": dashboard("station-gpu", "station / GPU", GPU, {}),
        "efficiency.json": dashboard("station-efficiency", "station / Efficiency", EFFICIENCY, prices),
    }


def render(board: dict[str, Any]) -> str:
    return json.dumps(board, indent=2) + "\n"


def main() -> None:
    DASHBOARDS.mkdir(parents=True, exist_ok=True)
    for name, board in generate().items():
        (DASHBOARDS / name).write_text(render(board))
        print(f"wrote {DASHBOARDS / name}")


if __name__ == "__main__":
    main()
