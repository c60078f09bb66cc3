"""The live traffic of a host, captured from its Prometheus as a profile (`profile-capture`), and its drift from
one (`profile-drift`); station.bench.traffic holds the queries, station.recipes.captures the profile."""

from __future__ import annotations

import time
from pathlib import Path

import requests
from rich.console import Console

from station import paths
from station.bench import traffic
from station.deploy import inventory, keys, playbook, tunnel
from station.deploy.actions import live_engine
from station.recipes import captures

TRAFFIC_PROFILES = paths.RESULTS / "profiles"


def engine_identity(host: str, engine_url: str, console: Console) -> dict[str, str]:
    """The live engine's recipe, configuration and vLLM version (asked at `engine_url`), for a record's provenance."""
    engine = live_engine(host, console)
    headers = {"Authorization": f"Bearer {keys.api_key(host)}"}
    version = requests.get(f"{engine_url}/version", headers=headers, timeout=10).json()["version"]
    return {"recipe": engine.recipe, "config_hash": engine.config, "vllm_version": version}


def prometheus(host: str, url: str, until: float) -> traffic.Prometheus:
    """The host's Prometheus at `url`, its queries evaluated at `until`."""
    interval = inventory.setting(inventory.host_vars(host), "prometheus", "prometheus_scrape_interval")
    return traffic.Prometheus(url, host, until, traffic.seconds(interval))


def capture_traffic(host: str, window: str, console: Console) -> tuple[captures.TrafficProfile, Path]:
    """The window's live traffic as a profile file; it becomes the host's reference for drift (and its alert)."""
    traffic.seconds(window)
    until = time.time()  # the window ends when the command starts, not when its checks are done
    with tunnel.urls(host, console, (tunnel.ENGINE, tunnel.PROMETHEUS)) as found:
        engine = engine_identity(host, found[tunnel.ENGINE], console)
        profile = traffic.capture(prometheus(host, found[tunnel.PROMETHEUS], until), window, engine)
    path = captures.write(profile, TRAFFIC_PROFILES)
    reference = [
        {"labels": {"quantity": f"{name}_mean", "profile": path.name}, "value": lengths.mean}
        for name, lengths in (
            ("prompt_tokens", profile.prompt_tokens),
            ("generation_tokens", profile.generation_tokens),
        )
    ]
    playbook.run("traffic_reference", host, {"station_traffic_reference": reference}, console)
    return profile, path


def captured_traffic(host: str, ref: str = "latest") -> tuple[Path, captures.TrafficProfile]:
    """A captured traffic profile: the host's latest (`latest` or nothing), or the file `ref` names."""
    path = captures.latest(TRAFFIC_PROFILES, host) if ref in ("", "latest") else Path(ref)
    return path, captures.read(path)


def traffic_drift(host: str, window: str, against: str, console: Console) -> tuple[Path, list[traffic.Drift]]:
    """The live window's shape against a captured profile (the host's latest unless `against` names one)."""
    until = time.time()
    reference_path, reference = captured_traffic(host, against)
    with tunnel.urls(host, console, (tunnel.PROMETHEUS,)) as found:
        live = traffic.capture(
            prometheus(host, found[tunnel.PROMETHEUS], until),
            window,
            reference.provenance.model_dump(include={"recipe", "config_hash", "vllm_version"}),
        )
    return reference_path, traffic.drift(reference, live)
