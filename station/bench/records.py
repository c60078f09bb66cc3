"""What a measured run leaves, typed, for the code that writes it and the code that reads it alike.

`RunRecord` is results/<run id>/result.json; `IndexEntry` is its line in
results/index.jsonl, made from the record and never by hand. Both carry
`schema_version`: a file from before the field existed reads as version 1 (the
shape it has always had); one written by a newer station is refused, naming
both versions.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from station.bench.agentic import AgenticMetrics
from station.bench.bench_result import BenchResult
from station.bench.telemetry import TelemetrySummary

SCHEMA_VERSION = 1


class Versioned(BaseModel):
    model_config = ConfigDict(frozen=True)

    schema_version: int = SCHEMA_VERSION

    @field_validator("schema_version")
    @classmethod
    def _readable(cls, version: int) -> int:
        if version > SCHEMA_VERSION:
            raise ValueError(
                f"schema version {version} was written by a newer station; this one reads up to {SCHEMA_VERSION}"
            )
        return version


class GpuDevice(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    name: str


class GpuFacts(BaseModel):
    """The host's GPUs as preflight's station_gpu_facts read them (more fields are kept as they came)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    present: bool
    reason: str = ""
    count: int = 0
    gpus: list[GpuDevice] = []
    driver_version: str | None = None
    cuda_version: str | None = None

    @property
    def label(self) -> str:
        """One short name for comparing runs: "1x NVIDIA GB300", or "none"."""
        return f"{self.count}x {self.gpus[0].name}" if self.present and self.gpus else "none"

    def describe(self) -> str:
        if not self.present:
            return f"none ({self.reason})"
        names = sorted({device.name for device in self.gpus})
        return f"{self.count}x {', '.join(names)}, driver {self.driver_version}, CUDA {self.cuda_version}"


class HostMachine(BaseModel):
    """The machine a run was made on: its Ansible facts and its Docker engine."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str  # in the inventory
    hostname: str = ""
    os: str = ""
    kernel: str = ""
    arch: str = ""
    cpu: str = ""
    cpu_count: int = 0
    cpu_flags: list[str] = []  # those that set a CPU engine's speed (station_cpu_facts)
    cpu_bfloat16: str = ""  # native or emulated
    memory_mb: int = 0
    docker_version: str = ""

    @property
    def cpu_label(self) -> str:
        """One short name for comparing CPU runs: the model, its cores and its speed-setting flags."""
        if not self.cpu_flags:
            return ""  # a record from before the flags were read: its CPU is not known well enough to compare
        return f"{self.cpu or 'CPU'}, {self.cpu_count} cores, {' '.join(self.cpu_flags)}"


def _empty_when_none(value: Any) -> Any:
    return {} if value is None else value  # Docker reports a container or image without labels as null


class EngineFacts(BaseModel):
    """The engine container a run measured: its image, its exact argv and its environment (allow-listed names only)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    container: str = ""
    image: str = ""
    image_id: str | None = None
    repo_digests: list[str] = []
    image_labels: dict[str, str] = {}
    argv: list[str] = []
    env: list[str] = []
    labels: dict[str, str] = {}
    started_at: str | None = None

    _labels = field_validator("image_labels", "labels", mode="before")(_empty_when_none)


class BenchContainer(BaseModel):
    """The benchmark client's container, where the host ran it (vLLM's benchmark)."""

    model_config = ConfigDict(frozen=True)

    image_id: str
    argv: list[str]
    started_at: str
    finished_at: str


class HostFacts(BaseModel):
    """results/<run id>/host.json: what the vllm_bench role read on the host (its `facts` entry point, or the
    benchmark's, which adds the client's container). A key the role adds and this model lacks is refused, so the
    two cannot drift apart unseen."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: HostMachine
    gpu: GpuFacts
    engine: EngineFacts
    bench: BenchContainer | None = None


class RunProvenance(BaseModel):
    """Where and how a run was made (station.bench.provenance.record): the host's facts, the recipe, the checkout."""

    model_config = ConfigDict(extra="allow", frozen=True)

    date: str
    bundle: dict[str, Any]
    inventory_host: str
    recipe: dict[str, Any]  # the recipe as it was served, dumped
    host: HostMachine | None = None  # none in records written before the facts were typed, if they lacked it
    gpu: GpuFacts | None = None
    engine: EngineFacts = EngineFacts()
    bench: BenchContainer | None = None

    @property
    def recipe_name(self) -> str:
        return self.recipe["name"]

    @property
    def vllm_version(self) -> str:
        return self.recipe["engine"]["vllm_version"]

    @property
    def commit(self) -> str | None:
        return self.bundle.get("commit")

    @property
    def gpu_label(self) -> str:
        return self.gpu.label if self.gpu else "none"

    @property
    def cpu_label(self) -> str:
        return self.host.cpu_label if self.host else ""


Kind = Literal["smoke-bench", "ladder-step", "agentic"]


class HostShare(BaseModel):
    """One host's part of a fleet's run, from its engine's own counters: what it served in the run's window."""

    model_config = ConfigDict(frozen=True)

    host: str
    requests: float
    output_tokens: float
    share: float  # of the fleet's output tokens
    prefix_cache_hit_rate: float | None  # None: the engine looked up no prefix
    prefix_cache_hits: float = 0.0  # prompt tokens its prefix cache held
    prefix_cache_queries: float = 0.0  # prompt tokens it looked up


class FleetFigures(BaseModel):
    """A run sent to a fleet's router: each host's share, and the requests the router sent again."""

    model_config = ConfigDict(frozen=True)

    router: str  # the host whose router took the run
    policy: str  # the router's routing policy
    routing: list[str] = []  # vllm-router's arguments for it (render.routing_args), the policy's settings included
    shares: list[HostShare]
    retries: float
    prefix_cache_hit_rate: float | None = None  # the fleet's: all hosts' hits over all their lookups


class RunRecord(Versioned):
    """results/<run id>/result.json: the figures, why they are no measurement if they are not, and provenance."""

    run_id: str
    kind: Kind
    context: dict[str, Any] = {}  # e.g. the ladder and step, or the agentic profile
    profile: dict[str, Any] | None = None  # the traffic measured: a bench profile or an agentic one, dumped
    client: dict[str, Any] | None = None  # the client that sent it, where not the host's own benchmark
    metrics: BenchResult | AgenticMetrics
    problems: list[str] = []
    telemetry: TelemetrySummary | None = None  # GPU telemetry; none for agentic replays
    reference: dict[str, Any] | None = None  # the figure the recipe or profile is measured against
    fleet: FleetFigures | None = None  # a run through a fleet's router: each host's share
    provenance: RunProvenance

    @field_validator("telemetry", mode="before")
    @classmethod
    def _none_when_empty(cls, telemetry: Any) -> Any:
        return telemetry or None  # agentic records before schema 1 wrote {}


class IndexEntry(Versioned):
    """A run's line in results/index.jsonl: enough to find, sort, compare and judge it without its record."""

    run_id: str
    date: str
    kind: Kind
    host: str
    recipe: str
    context: dict[str, Any] = {}
    vllm_version: str
    image_id: str | None = None
    commit: str | None = None
    gpu: str
    cpu: str = ""  # HostMachine.cpu_label; empty in runs recorded before it
    output_throughput: float
    p99_ttft_ms: float
    p99_tpot_ms: float | None = None  # none for agentic runs
    failed: int
    # Why the run is not a valid measurement (failed or missing requests or tokens), and whether the client,
    # not the engine, set the pace: such a run is indexed but never a baseline or a cost input.
    problems: list[str] = []
    client_bound: bool = False
    profile: dict[str, Any] | None = None
    avg_power_w: float | None = None
    output_tokens_per_joule: float | None = None

    @classmethod
    def of(cls, record: RunRecord) -> IndexEntry:
        metrics, provenance, power = record.metrics, record.provenance, record.telemetry
        return cls(
            run_id=record.run_id,
            date=provenance.date,
            kind=record.kind,
            host=provenance.inventory_host,
            recipe=provenance.recipe_name,
            context=record.context,
            vllm_version=provenance.vllm_version,
            image_id=provenance.engine.image_id,
            commit=provenance.commit,
            gpu=provenance.gpu_label,
            cpu=provenance.cpu_label,
            output_throughput=metrics.output_throughput,
            p99_ttft_ms=metrics.p99_ttft_ms,
            p99_tpot_ms=metrics.p99_tpot_ms,
            failed=metrics.failed,
            problems=record.problems,
            client_bound=metrics.client_bound,
            profile=record.profile,
            avg_power_w=power.avg_power_w if power else None,
            output_tokens_per_joule=power.output_tokens_per_joule if power else None,
        )

    @property
    def invalid(self) -> str | None:
        """Why the run is no measurement of its profile (what it was); None when it is one."""
        if self.problems:
            return f"not a valid measurement: {'; '.join(self.problems)}"
        if self.failed:
            return f"not a valid measurement: {self.failed} failed request(s)"
        if self.client_bound:
            return "paced by its client, which could not reach the profile's concurrency"
        return None
