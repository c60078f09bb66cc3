"""The traffic an engine actually serves, read from its own metrics in Prometheus.

`capture` turns a window of live traffic into a profile (lengths, rate,
concurrency, prefix-cache hits, chat share) with its provenance; `drift`
compares the live traffic with a captured profile, quantity by quantity,
against the one ratio threshold in monitoring/prometheus/thresholds.yml (the
TrafficProfileDrift alert uses the same).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import requests
import yaml

from station import paths
from station.errors import StationError
from station.recipes.captures import Lengths, Provenance, TrafficProfile

THRESHOLDS = paths.ROOT / "monitoring" / "prometheus" / "thresholds.yml"
QUANTILES = (0.5, 0.9, 0.99)


def seconds(window: str) -> int:
    """Prometheus duration (30s, 5m, 1h, 1d) in seconds."""
    match = re.fullmatch(r"(\d+)([smhd])", window)
    if not match or int(match.group(1)) == 0:
        raise StationError(f"window {window!r} is not a duration", "use a number and a unit: 30s, 5m, 1h, 1d")
    return int(match.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


@dataclass(frozen=True)
class Prometheus:
    url: str
    host: str
    at: float  # Unix time every query is evaluated at: the window ends here
    scrape_s: int  # the host's scrape interval: counters are read sample by sample

    def scalar(self, expr: str) -> float | None:
        """The one value of an instant query; None when it has no sample or is not a number (0/0)."""
        response = requests.get(f"{self.url}/api/v1/query", params={"query": expr, "time": self.at}, timeout=30)
        if response.status_code != 200:
            raise StationError(f"Prometheus refused {expr}: {response.text[:300]}", "check the query and Prometheus")
        result = response.json()["data"]["result"]
        value = float(result[0]["value"][1]) if result else None
        return None if value is None or value != value else value  # NaN is x != x

    @property
    def selector(self) -> str:
        return f'host="{self.host}"'

    def counted(self, metric: str, window: str, matcher: str = "", by: str = "") -> str:
        """A counter's exact growth over the window, summed (by the labels `by` names): each scrape's rise over
        the one before, where a fall is a restart that counts from zero and a series born inside the window (as
        vllm-router creates a route's counter with its first request) counts from zero too.

        Not increase(): it extrapolates each series to the window's edges, except where that would go below zero,
        so the buckets of one histogram are stretched by different factors and its quantiles leave their bucket."""
        series = f"{metric}{{{self.selector}{f', {matcher}' if matcher else ''}}}"
        step = f"{self.scrape_s}s"
        rise = f"(({series} - {series} offset {step}) >= 0 or {series} + 0)"  # + 0: nameless, as the rises are
        return f"sum{f' by ({by})' if by else ''} (sum_over_time({rise}[{window}:{step}]))"

    def ratio(self, numerator: str, denominator: str, window: str) -> float | None:
        return self.scalar(f"{self.counted(numerator, window)} / {self.counted(denominator, window)}")

    def lengths(self, histogram: str, window: str) -> Lengths:
        quantile = {
            q: self.scalar(f"histogram_quantile({q}, {self.counted(f'{histogram}_bucket', window, by='le')})")
            for q in QUANTILES
        }
        return Lengths(
            mean=self.ratio(f"{histogram}_sum", f"{histogram}_count", window) or 0.0,
            p50=quantile[0.5] or 0.0,
            p90=quantile[0.9] or 0.0,
            p99=quantile[0.99] or 0.0,
        )


def capture(prometheus: Prometheus, window: str, engine: dict[str, str]) -> TrafficProfile:
    """The window's traffic, as the engine and the router counted it; `engine` holds recipe, config and version."""
    span = seconds(window)
    requests_done = prometheus.scalar(prometheus.counted("vllm:request_success_total", window)) or 0.0
    if requests_done < 1:
        raise StationError(
            f"the engine on {prometheus.host} finished no request in the last {window}",
            "capture a window with traffic in it (--window), or send some first",
        )
    selector = prometheus.selector
    running = f"sum(vllm:num_requests_running{{{selector}}})"
    in_flight = f"({running} + sum(vllm:num_requests_waiting{{{selector}}}))"
    completions = prometheus.counted("vllm_router_requests_total", window, 'route=~"/v1/(chat/)?completions"')
    chats = prometheus.counted("vllm_router_requests_total", window, 'route="/v1/chat/completions"')
    return TrafficProfile(
        provenance=Provenance(
            host=prometheus.host,
            window=window,
            captured_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            **engine,
        ),
        requests=round(requests_done),
        requests_per_s=requests_done / span,
        concurrency_mean=prometheus.scalar(f"avg_over_time({running}[{window}:])") or 0.0,
        in_flight_p90=prometheus.scalar(f"quantile_over_time(0.9, ({in_flight} > 0)[{window}:])"),
        prompt_tokens=prometheus.lengths("vllm:request_prompt_tokens", window),
        generation_tokens=prometheus.lengths("vllm:request_generation_tokens", window),
        prefix_cache_hit_rate=prometheus.ratio(
            "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", window
        ),
        chat_share=prometheus.scalar(f"{chats} / {completions}"),
    )


@dataclass(frozen=True)
class Drift:
    quantity: str
    reference: float
    live: float

    @property
    def ratio(self) -> float:
        return self.live / self.reference if self.reference else float("inf") if self.live else 1.0

    def beyond(self, threshold: float) -> bool:
        return self.ratio > threshold or self.ratio < 1 / threshold


# What drift compares: the traffic's shape, not its volume (rate and concurrency follow the time of day).
SHAPE = {
    "prompt tokens, mean": lambda p: p.prompt_tokens.mean,
    "prompt tokens, p90": lambda p: p.prompt_tokens.p90,
    "generated tokens, mean": lambda p: p.generation_tokens.mean,
    "generated tokens, p90": lambda p: p.generation_tokens.p90,
}


def drift(reference: TrafficProfile, live: TrafficProfile) -> list[Drift]:
    return [Drift(name, read_value(reference), read_value(live)) for name, read_value in SHAPE.items()]


def drift_ratio() -> float:
    """The one threshold: live over reference beyond this ratio (or under its inverse) is drift."""
    return float(yaml.safe_load(THRESHOLDS.read_text())["traffic_drift_ratio"])
