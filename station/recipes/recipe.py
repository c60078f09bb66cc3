"""Recipes: the single source of truth for what is served, how, and how it is measured.

A recipe is a YAML file under recipes/ (or anywhere, given by path). It is
validated here, field by field, before anything touches a host.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from station import paths
from station.errors import StationError

# Images station builds are named here: a name with no registry host would resolve to a Docker Hub account.
LOCAL_IMAGES = "station.invalid/"

# Flags station sets itself from other recipe fields or host variables.
RESERVED_FLAGS = {
    "model": "model.id",
    "served-model-name": "model.served_name",
    "host": "the engine always listens on 0.0.0.0 inside its container",
    "port": "the host variable vllm_server_port",
    "api-key": "the generated API key (station sets VLLM_API_KEY)",
    "middleware": "station's key middleware (the API key on every route)",
    "revision": "model.revision",
    "shutdown-timeout": "the host variable vllm_server_drain_timeout_s (a stopping engine finishes its requests)",
    "hf-token": "the token file provisioning keeps on the host (host_tuning_hf_token), which the engine reads",
}
RESERVED_ENV = {"VLLM_API_KEY": "the generated API key"}
# Recipes are recorded in provenance, run files and logs: no secrets in them.
SECRET_ENV = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL")
SECRET_ENV_HINT = (
    "recipes are recorded in provenance, results and logs; give the Hugging Face token to provisioning "
    "(host_tuning_hf_token), which keeps it in a file on the host that the engine reads"
)
# Jinja delimiters: Ansible would evaluate them on the controller, which holds every host's keys.
TEMPLATE_SYNTAX = re.compile(r"\{\{|\{%|\{#")

FLAG_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
SIZE = re.compile(r"^[0-9]+[bkmg]$")
NAME = r"^[a-z0-9][a-z0-9.-]*$"  # part of run ids and file names

ArgValue = bool | int | float | str | list[Any] | dict[str, Any]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Model(_Strict):
    """What is served. `source: image` means the weights ship inside the engine image."""

    id: str = Field(min_length=1, description="Hub id, or a path inside the engine image")
    served_name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9._/-]+$")
    source: Literal["hub", "image"] = "hub"
    revision: str | None = None
    inputs: list[Literal["text", "image"]] = Field(
        ["text"], description="What the model reads: agent-check sends a vision model an image"
    )

    @field_validator("inputs")
    @classmethod
    def _reads_text(cls, inputs: list[str]) -> list[str]:
        if "text" not in inputs or len(set(inputs)) != len(inputs):
            raise ValueError(f"{inputs} must list text, and each input once (e.g. [text, image])")
        return inputs

    @property
    def reads_images(self) -> bool:
        return "image" in self.inputs


class Container(_Strict):
    gpus: bool = True
    gpu_memory_gib: Annotated[int, Field(ge=0, description="Memory each GPU needs; provisioning checks it")] = 0
    shm_size: str = Field("16g", pattern=SIZE.pattern)
    ipc_host: bool = False


class Engine(_Strict):
    image: str
    build: str | None = Field(
        None, pattern=r"^[a-z0-9][a-z0-9._-]*$", description="Folder under docker/ that builds the image locally"
    )
    build_args: dict[str, str] = Field({}, description="Build arguments of that folder's Dockerfile")
    vllm_version: str = Field(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+\S*$")
    args: dict[str, ArgValue] = {}
    env: dict[str, str] = {}
    container: Container = Container()
    health_timeout_s: Annotated[int, Field(gt=0)] = 900
    dtype_from_cpu: bool = Field(
        False,
        description="A CPU engine's --dtype chosen from the host's CPU at deploy: bfloat16 where it computes bfloat16 "
        "natively (AVX512-BF16 or AMX), float32 elsewhere; a dtype in args pins it instead",
    )

    @property
    def follows_cpu(self) -> bool:
        """Whether the host's CPU sets --dtype: asked for, and not pinned in args."""
        return self.dtype_from_cpu and "dtype" not in self.args

    @field_validator("image")
    @classmethod
    def _image_is_pinned(cls, image: str) -> str:
        if DIGEST.search(image):
            return image
        repo, colon, tag = image.rpartition(":")
        if not colon or not repo or "/" in tag:
            raise ValueError(f"{image!r} has no tag or digest; pin it, e.g. name:1.2.3 or name@sha256:<digest>")
        if tag == "latest":
            raise ValueError(f"{image!r} uses 'latest'; pin a version or a digest")
        return image

    @field_validator("args")
    @classmethod
    def _args_are_flags(cls, args: dict[str, ArgValue]) -> dict[str, ArgValue]:
        for flag in args:
            if not FLAG_NAME.match(flag):
                raise ValueError(f"{flag!r} is not a flag name; write it without dashes in front, e.g. max-num-seqs")
            if flag in RESERVED_FLAGS:
                raise ValueError(f"--{flag} is set by station from {RESERVED_FLAGS[flag]}; remove it from engine.args")
        return args

    @field_validator("env", mode="before")
    @classmethod
    def _env_values_are_text(cls, env: Any) -> Any:
        if not isinstance(env, dict):
            return env
        for name in env:
            if not isinstance(name, str) or not ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not an environment variable name (A-Z, 0-9, _)")
            if name in RESERVED_ENV:
                raise ValueError(f"{name} is set by station ({RESERVED_ENV[name]}); remove it")
            if SECRET_ENV.search(name):
                raise ValueError(f"{name} looks like a secret: {SECRET_ENV_HINT}")
        return {k: v if isinstance(v, str) else _scalar_text(k, v) for k, v in env.items()}

    @model_validator(mode="after")
    def _dtype_from_cpu_on_cpu_engines(self) -> Engine:
        if self.dtype_from_cpu and self.container.gpus:
            raise ValueError(
                "dtype_from_cpu chooses a CPU engine's dtype from the host's CPU, and this engine runs on GPUs "
                "(container.gpus): remove it, or pin args dtype"
            )
        return self

    @model_validator(mode="after")
    def _pulled_images_pinned_by_digest(self) -> Engine:
        if self.build is None and not DIGEST.search(self.image):
            raise ValueError(f"image {self.image!r} is pulled from a registry: pin it by digest (name:tag@sha256:...)")
        if self.build is not None and not (paths.DOCKER / self.build / "Dockerfile").is_file():
            raise ValueError(f"build: docker/{self.build}/Dockerfile does not exist")
        if self.build is not None and not self.image.startswith(LOCAL_IMAGES):
            raise ValueError(
                f"image {self.image!r} is built by station (build: {self.build}): name it {LOCAL_IMAGES}<name>:<tag>, "
                "a name no registry can hold (.invalid never resolves), so a host missing it is never served another"
            )
        return self


def _scalar_text(name: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name}: environment values must be text or numbers, got {type(value).__name__}")
    return str(value)


class BenchProfile(_Strict):
    """The traffic shape a benchmark replays: random prompts of fixed lengths."""

    input_len: Annotated[int, Field(gt=0)]
    output_len: Annotated[int, Field(gt=0)]
    concurrency: Annotated[int, Field(gt=0)]
    num_prompts: Annotated[int, Field(gt=0)]
    warmups: Annotated[int, Field(ge=0)] = 0
    timeout_s: Annotated[int, Field(gt=0)] = 3600

    @model_validator(mode="after")
    def _enough_prompts(self) -> BenchProfile:
        if self.num_prompts < self.concurrency:
            raise ValueError(
                f"num_prompts ({self.num_prompts}) is below concurrency ({self.concurrency}): "
                "the run could never reach the concurrency it claims"
            )
        return self


CACHE_AWARE_SETTINGS = ("cache_threshold", "balance_abs_threshold", "balance_rel_threshold")
# vLLM's router (cache_aware) matches each prompt's tokens, which it asks every engine for at
# /v1/chat/completions/render. vLLM (0.31 and 0.32) serves that only with this flag, and answers 403 without it:
# the router then routes agent sessions as if at random (measured: the fleet's hit rate no better than round_robin).
SCALE_OUT_FLAG = "enable-scale-out"
# vllm-router 0.1.17's policies but kv_aware, which needs the engines' KV events (station does not publish them).
RouterPolicy = Literal["cache_aware", "round_robin", "power_of_two", "consistent_hash", "random", "sticky_least_loaded"]


class Router(_Strict):
    """How vLLM's router spreads requests over a fleet's engines (with one engine it has no choice to make).

    cache_aware sends a request to the engine whose cache best matches its prefix, unless the engines' loads
    differ by more than balance_abs_threshold requests and balance_rel_threshold times: then to the least busy.
    Unset thresholds are vllm-router's own (0.3, 64, 1.5)."""

    policy: RouterPolicy = "cache_aware"
    cache_threshold: float | None = Field(None, ge=0, le=1, description="Share of a prompt matched to follow it")
    balance_abs_threshold: int | None = Field(None, ge=0, description="Requests more than the least busy engine")
    balance_rel_threshold: float | None = Field(None, ge=1, description="Times the least busy engine's requests")

    @model_validator(mode="after")
    def _thresholds_are_cache_aware(self) -> Router:
        given = [name for name in CACHE_AWARE_SETTINGS if getattr(self, name) is not None]
        if given and self.policy != "cache_aware":
            raise ValueError(
                f"{', '.join(given)}: settings of the cache_aware policy, not {self.policy}; "
                "remove them or set policy: cache_aware"
            )
        return self


class Reference(_Strict):
    """A published figure to compare a measurement against."""

    output_throughput: Annotated[float, Field(gt=0)]
    hardware: str
    source: str
    note: str | None = None


class Recipe(_Strict):
    name: str = Field(pattern=NAME)
    description: str
    model: Model
    engine: Engine
    bench: BenchProfile
    router: Router = Router()
    profile: str = Field(
        "random",
        pattern=NAME,
        description="What smoke-bench replays by default: random (the bench above) or a name under recipes/profiles/",
    )
    reference: Reference | None = None
    caveats: list[str] = []
    tuned: dict[str, Any] | None = Field(
        None, description="How invoke tune found this configuration (tune, trial, profile, verdict): a record only"
    )

    @model_validator(mode="after")
    def _cache_aware_engines_render(self) -> Recipe:
        if self.router.policy == "cache_aware" and self.engine.args.get(SCALE_OUT_FLAG) is False:
            raise ValueError(
                f"router.policy cache_aware matches prompts by the tokens the engines render, which "
                f"engine.args {SCALE_OUT_FLAG}: false turns off: remove it, or route another way (router: policy)"
            )
        return self

    @model_validator(mode="after")
    def _image_models_are_local(self) -> Recipe:
        if self.model.source == "image" and not self.model.id.startswith("/"):
            raise ValueError(f"model.id {self.model.id!r}: a model shipped in the image is an absolute path")
        return self


class Step(_Strict):
    """One rung of a ladder: a change on top of the previous rung."""

    change: str = Field(min_length=1)
    args: dict[str, ArgValue | None] = Field({}, description="Merged onto the previous step's args; null removes")
    env: dict[str, str | int | float | None] = Field(
        {}, description="Merged onto the previous step's env; null removes"
    )
    published: Annotated[float, Field(gt=0)] | None = None
    note: str | None = None


class Ladder(_Strict):
    """A recipe applied one switch at a time: step 0 is `base`, each step changes the one before."""

    name: str = Field(pattern=NAME)
    description: str
    base: dict[str, Any]
    steps: list[Step] = Field(min_length=1)
    reference_hardware: str = ""
    reference_source: str = ""
    measured: bool = Field(True, description="False for a variant nobody has measured: it has no published figures")
    caveats: list[str] = []

    @model_validator(mode="after")
    def _every_step_is_a_valid_recipe(self) -> Ladder:
        for index in range(len(self.steps)):
            try:
                self.recipe(index)
            except ValidationError as exc:
                raise ValueError(f"step {index} ({self.steps[index].change}):\n{format_errors(exc)}") from exc
        return self

    def recipe(self, index: int) -> Recipe:
        """The full recipe of step `index`: the base with every change up to it applied."""
        engine = dict(self.base.get("engine", {}))
        for step in self.steps[: index + 1]:
            engine["args"] = merge(engine.get("args", {}), step.args)
            engine["env"] = merge(engine.get("env", {}), step.env)
        step = self.steps[index]
        reference = self.published(index) and {
            "output_throughput": step.published,
            "hardware": self.reference_hardware,
            "source": self.reference_source,
            "note": step.note,
        }
        return Recipe.model_validate(
            self.base
            | {
                "name": f"{self.name}-step{index}",
                "description": f"{self.name}, step {index}: {step.change}",
                "engine": engine,
                "reference": reference or None,
                "caveats": self.caveats,
            }
        )

    def published(self, index: int) -> float | None:
        """Step `index`'s published figure; an unmeasured variant has none, whatever it inherited."""
        return self.steps[index].published if self.measured else None

    def label(self, index: int) -> str:
        return f"step {index} ({self.steps[index].change})"


def merge(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """base with change applied: mappings merge key by key, null removes a key, anything else replaces."""
    merged = dict(base)
    for key, value in change.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def available() -> list[str]:
    """Names of the recipes and ladders shipped under recipes/."""
    return sorted(p.stem for p in paths.RECIPES.glob("*.yml"))


def resolve_in(folder: Path, name_or_path: str, kind: str, names: list[str]) -> Path:
    """A data file by name under `folder`, or by path: a recipe, a traffic profile."""
    candidate = Path(name_or_path)
    if candidate.suffix in {".yml", ".yaml"} or "/" in name_or_path:
        if candidate.is_file():
            return candidate
        raise StationError(f"{kind} file {name_or_path} does not exist", f"give a path to a YAML file or a {kind} name")
    named = folder / f"{name_or_path}.yml"
    if named.is_file():
        return named
    raise StationError(f"unknown {kind} {name_or_path!r}", f"available {kind}s: {', '.join(names)}")


def read_mapping(path: Path, kind: str, example: str) -> dict[str, Any]:
    """A data file's fields, or a clear error when it is not YAML or not a mapping."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise StationError(f"{kind} {path} is not valid YAML: {exc}", "fix the syntax at the line shown") from exc
    if not isinstance(data, dict):
        raise StationError(f"{kind} {path} must be a mapping of fields", f"see {example} for the format")
    return data


def resolve(name_or_path: str) -> Path:
    """A recipe name under recipes/, or a path to a YAML file."""
    return resolve_in(paths.RECIPES, name_or_path, "recipe", available())


def read(name_or_path: str, seen: tuple[Path, ...] = ()) -> tuple[Path, dict[str, Any]]:
    """A recipe file's data, with what it `extends` merged underneath."""
    path = resolve(name_or_path)
    if path.resolve() in seen:
        raise StationError(f"recipe {path} extends itself through {' → '.join(map(str, seen))}", "break the cycle")
    data = read_mapping(path, "recipe", "recipes/cpu-smoke.yml")
    parent = data.pop("extends", None)
    if parent:
        data = merge(read(str(parent), (*seen, path.resolve()))[1], data)
    reject_templates(path, data)
    return path, data


def reject_templates(path: Path, data: Any, where: str = "") -> None:
    """Refuse template syntax anywhere in a recipe: Ansible would run it on the controller."""
    if isinstance(data, dict):
        for key, value in data.items():
            reject_templates(path, key, where)
            reject_templates(path, value, f"{where}.{key}" if where else str(key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            reject_templates(path, value, f"{where}[{index}]")
    elif isinstance(data, str) and TEMPLATE_SYNTAX.search(data):
        raise StationError(
            f"recipe {path}: {where or 'a key'} holds template syntax ({data!r}), "
            "which Ansible would run on this machine",
            "write the value literally, without {{ }}, {% %} or {# #}",
        )


def validated(model: type[BaseModel], path: Path, data: dict[str, Any], kind: str = "recipe") -> Any:
    """A data file's fields as `model`, or every invalid field named in one error."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise StationError(f"{kind} {path} is invalid:\n{format_errors(exc)}", "fix the fields listed above") from exc


def load_ladder(name_or_path: str) -> Ladder:
    path, data = read(name_or_path)
    if "steps" not in data:
        raise StationError(f"recipe {path} is not a ladder (it has no steps)", "give a ladder, e.g. cpu-ladder")
    return validated(Ladder, path, data)


def load(name_or_path: str) -> Recipe:
    """A recipe, validated field by field; `LADDER` is its last step, `LADDER:N` its step N."""
    name, _, step = name_or_path.rpartition(":") if ":" in name_or_path else (name_or_path, "", "")
    path, data = read(name)
    if "steps" not in data:
        if step:
            raise StationError(f"recipe {path} has no steps to choose from", f"use --recipe {name}")
        return validated(Recipe, path, data)
    ladder = validated(Ladder, path, data)
    last = len(ladder.steps) - 1
    if step and not (step.isdigit() and int(step) <= last):
        raise StationError(f"{name} has no step {step!r}", f"steps are 0 to {last}")
    return ladder.recipe(int(step) if step else last)


def load_labelled(name_or_path: str) -> list[tuple[str, Recipe]]:
    """Every recipe a file defines, labelled: each step of a ladder, or the one recipe."""
    path, data = read(name_or_path)
    if "steps" not in data:
        recipe = validated(Recipe, path, data)
        return [(recipe.name, recipe)]
    ladder = validated(Ladder, path, data)
    return [(ladder.label(index), ladder.recipe(index)) for index in range(len(ladder.steps))]


def load_all_labelled(names_or_paths: list[str]) -> list[tuple[str, Recipe]]:
    """Every recipe the files define, labelled; where there are several files, each label names its file as given
    (a ladder's: the file, then the step)."""
    if len(names_or_paths) == 1:
        return load_labelled(names_or_paths[0])
    return [
        (name if label == chosen.name else f"{name} {label}", chosen)
        for name in names_or_paths
        for label, chosen in load_labelled(name)
    ]


def format_errors(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        where = ".".join(str(part) for part in err["loc"]) or "(top level)"
        message = err["msg"].removeprefix("Value error, ")
        lines.append(f"  - {where}: {message}")
    return "\n".join(lines)
