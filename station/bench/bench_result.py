"""The result file `vllm bench serve --save-result` writes, parsed and checked."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, computed_field

from station.errors import StationError
from station.recipes.recipe import BenchProfile

# Below this share of the requested concurrency, the client could not keep
# enough requests in flight: the run measured the client, not the engine.
CLIENT_BOUND_SHARE = 0.8


class BenchResult(BaseModel):
    """The fields station reports; the raw file is kept beside it with everything else."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    completed: int
    failed: int
    duration: float
    num_prompts: int
    max_concurrency: int | None
    total_input_tokens: int
    total_output_tokens: int
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    mean_e2el_ms: float
    p50_ttft_ms: float
    p99_ttft_ms: float
    p50_tpot_ms: float
    p99_tpot_ms: float
    p50_itl_ms: float
    p99_itl_ms: float
    spec_decode_acceptance_rate: float | None = None
    spec_decode_acceptance_length: float | None = None

    @computed_field
    @property
    def achieved_concurrency(self) -> float:
        """Mean requests in flight over the run (Little's law: total latency / wall time)."""
        if self.duration <= 0:
            return 0.0
        return self.mean_e2el_ms / 1000 * self.completed / self.duration

    @computed_field
    @property
    def client_bound(self) -> bool:
        return bool(self.max_concurrency) and self.achieved_concurrency < CLIENT_BOUND_SHARE * self.max_concurrency


def parse(path: Path) -> BenchResult:
    try:
        return BenchResult.model_validate(json.loads(path.read_text()))
    except FileNotFoundError as exc:
        raise StationError(f"no benchmark result at {path}", "the benchmark did not save one; see bench.log") from exc
    except (json.JSONDecodeError, ValidationError) as exc:
        raise StationError(f"{path} is not a vllm bench result: {exc}", "see bench.log beside it") from exc


def problems(result: BenchResult, profile: BenchProfile) -> list[str]:
    """Why this run is not a valid measurement of the profile (empty when it is)."""
    found = []
    if result.failed:
        found.append(f"{result.failed} of {result.num_prompts} requests failed")
    if result.completed != profile.num_prompts:
        found.append(f"{result.completed} requests completed, {profile.num_prompts} were sent")
    expected_tokens = profile.num_prompts * profile.output_len
    if result.total_output_tokens != expected_tokens:
        found.append(f"{result.total_output_tokens} output tokens, expected {expected_tokens}")
    return found
