"""A traffic profile captured from a host's live traffic (station.bench.capture): the file and its model.

Lengths, rate, concurrency, prefix-cache hits and chat share over a window, with
where and when they were read; `invoke tune --traffic` replays one in an agentic
profile's sessions (station.recipes.profiles.replaying).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel

from station.errors import StationError


class Lengths(BaseModel):
    """Tokens per request: the exact mean (histogram sum over count) and quantiles read from the histogram."""

    mean: float
    p50: float
    p90: float
    p99: float


class Provenance(BaseModel):
    host: str
    window: str
    captured_at: str
    recipe: str
    config_hash: str
    vllm_version: str


class TrafficProfile(BaseModel):
    schema_version: Literal[1] = 1
    provenance: Provenance
    requests: int
    requests_per_s: float
    concurrency_mean: float
    # Requests in the engine, running or queued, p90 over the samples where any are: how many agents wait on it
    # when busy (running alone stops at max-num-seqs). None: none seen, or a capture from before it was read.
    in_flight_p90: float | None = None
    prompt_tokens: Lengths
    generation_tokens: Lengths
    prefix_cache_hit_rate: float | None  # None: no prefix-cache lookup in the window
    chat_share: float | None  # share of chat among completion requests, from the router; None: none seen


def write(profile: TrafficProfile, folder: Path) -> Path:
    stamp = profile.provenance.captured_at.replace(":", "").replace("-", "").replace("+0000", "Z")
    path = folder / f"{profile.provenance.host}-{stamp}.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(profile.model_dump(), sort_keys=False))
    return path


def read(path: Path) -> TrafficProfile:
    try:
        return TrafficProfile.model_validate(yaml.safe_load(path.read_text()))
    except (OSError, ValueError) as error:
        raise StationError(
            f"{path} is not a captured traffic profile: {error}", "capture one: invoke profile-capture"
        ) from error


def latest(folder: Path, host: str) -> Path:
    found = sorted(folder.glob(f"{host}-*.yml"))
    if not found:
        raise StationError(
            f"no captured traffic profile for {host} in {folder}", f"invoke profile-capture --host {host}"
        )
    return found[-1]
