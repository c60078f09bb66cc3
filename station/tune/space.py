"""Search spaces: which engine flags a tune may change, within what, and what it optimises under which limits.

A space is a YAML file under recipes/spaces/ (or anywhere, given by path),
validated like recipes. Each flag has a list of `choices` or a numeric range
(`low`, `high`, optional `step` and `log`); a candidate is the recipe the tune
starts from with the sampled values on top. The objective and constraints
name figures of an agentic replay (station.bench.agentic.AgenticMetrics).
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal

import optuna
from pydantic import Field, model_validator

from station import paths
from station.recipes.recipe import (
    FLAG_NAME,
    NAME,
    RESERVED_FLAGS,
    ArgValue,
    Recipe,
    _Strict,
    merge,
    read_mapping,
    reject_templates,
    resolve_in,
    validated,
)

SPACES = paths.RECIPES / "spaces"

# Figures of a replay a tune can optimise or limit, and which way is better.
METRICS = {
    "output_throughput": "maximize",
    "per_session_tok_s_p10": "maximize",
    "per_session_tok_s_p50": "maximize",
    "prefix_cache_hit_rate": "maximize",
    "p99_ttft_ms": "minimize",
    "p99_tpot_ms": "minimize",
    "turn_latency_p50_ms": "minimize",
    "turn_latency_p99_ms": "minimize",
    "failed": "minimize",
}
Metric = Literal[
    "output_throughput",
    "per_session_tok_s_p10",
    "per_session_tok_s_p50",
    "prefix_cache_hit_rate",
    "p99_ttft_ms",
    "p99_tpot_ms",
    "turn_latency_p50_ms",
    "turn_latency_p99_ms",
    "failed",
]
Scalar = bool | int | float | str
UNMET = 1e18  # a constraint on a figure the replay did not produce


class Choices(_Strict):
    choices: list[ArgValue] = Field(min_length=1, description="Values as a recipe writes them, mappings included")

    def suggest(self, trial: optuna.Trial, name: str) -> ArgValue:
        if all(isinstance(choice, Scalar) for choice in self.choices):
            return trial.suggest_categorical(name, self.choices)
        # Optuna's categories are scalars: a mapping (e.g. speculative-config) is sampled as its JSON text.
        return json.loads(
            trial.suggest_categorical(name, [json.dumps(choice, sort_keys=True) for choice in self.choices])
        )


class Range(_Strict):
    low: int | float
    high: int | float
    step: Annotated[int | float, Field(gt=0)] | None = None
    log: bool = False

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if self.low >= self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")
        if self.log and (self.low <= 0 or self.step is not None):
            raise ValueError("a log range needs low > 0 and no step")
        return self

    @property
    def integer(self) -> bool:
        return all(isinstance(v, int) for v in (self.low, self.high, self.step or 1))


class Limit(_Strict):
    at_most: float | None = None
    at_least: float | None = None

    @model_validator(mode="after")
    def _bounded(self) -> Limit:
        if self.at_most is None and self.at_least is None:
            raise ValueError("give at_most, at_least or both")
        return self

    def excess(self, value: float) -> float:
        """How far `value` is outside the limit: 0 or less inside (Optuna's constraint convention)."""
        over = value - self.at_most if self.at_most is not None else float("-inf")
        under = self.at_least - value if self.at_least is not None else float("-inf")
        return max(over, under)

    def describe(self) -> str:
        parts = [
            f"≤ {self.at_most:g}" if self.at_most is not None else "",
            f"≥ {self.at_least:g}" if self.at_least is not None else "",
        ]
        return " and ".join(part for part in parts if part)


class SearchSpace(_Strict):
    name: str = Field(pattern=NAME)
    description: str
    flags: dict[str, Choices | Range] = Field(min_length=1, description="Engine args (recipe spelling) to search")
    objective: Metric = "output_throughput"
    constraints: dict[Metric, Limit] = Field(
        default_factory=lambda: {"failed": Limit(at_most=0)},
        description="Limits a trial must meet to count; a failed request always disqualifies",
    )

    @model_validator(mode="after")
    def _flags_are_tunable(self) -> SearchSpace:
        for name in self.flags:
            if not FLAG_NAME.match(name):
                raise ValueError(f"flag {name!r}: spell it as in a recipe's engine.args (lowercase, dashes)")
            if name in RESERVED_FLAGS:
                raise ValueError(f"flag {name!r} is set by station ({RESERVED_FLAGS[name]}), not tunable")
        return self

    @property
    def size(self) -> int | None:
        """How many configurations the space holds; None when a range makes it continuous."""
        if not all(isinstance(dimension, Choices) for dimension in self.flags.values()):
            return None
        return math.prod(len(dimension.choices) for dimension in self.flags.values())

    @property
    def direction(self) -> str:
        return METRICS[self.objective]

    def suggest(self, trial: optuna.Trial) -> dict[str, ArgValue]:
        """One candidate's values for every flag, as Optuna's sampler picks them."""
        picked: dict[str, ArgValue] = {}
        for name, dimension in self.flags.items():
            if isinstance(dimension, Choices):
                picked[name] = dimension.suggest(trial, name)
            elif dimension.integer:
                picked[name] = trial.suggest_int(
                    name, int(dimension.low), int(dimension.high), step=int(dimension.step or 1), log=dimension.log
                )
            else:
                picked[name] = trial.suggest_float(
                    name, dimension.low, dimension.high, step=dimension.step, log=dimension.log
                )
        return picked

    @property
    def limits(self) -> dict[str, Limit]:
        """The constraints, with no failed request among them whatever the file says."""
        return {"failed": Limit(at_most=0)} | self.constraints

    def violations(self, metrics: dict[str, Any]) -> dict[str, float]:
        """Each constraint's excess (≤ 0 when met); a figure the replay did not produce is UNMET."""
        return {
            metric: limit.excess(metrics[metric]) if metrics.get(metric) is not None else UNMET
            for metric, limit in self.limits.items()
        }

    def describe_constraints(self) -> str:
        return ", ".join(f"{metric} {limit.describe()}" for metric, limit in self.limits.items())


def candidate(base: Recipe, values: dict[str, ArgValue], name: str) -> Recipe:
    """`base` with the sampled flag values on top, validated as a recipe of its own."""
    data = base.model_dump(mode="json")
    data["engine"]["args"] = merge(data["engine"]["args"], values)
    data |= {"name": name, "description": f"{base.name} with {render_values(values)}"}
    return Recipe.model_validate(data)


def render_values(values: dict[str, Any]) -> str:
    return ", ".join(f"{name}={value}" for name, value in values.items())


def available() -> list[str]:
    return sorted(p.stem for p in SPACES.glob("*.yml"))


def load(name_or_path: str) -> SearchSpace:
    path = resolve_in(SPACES, name_or_path, "search space", available())
    data = read_mapping(path, "search space", "recipes/spaces/cpu-agentic.yml")
    reject_templates(path, data)
    return validated(SearchSpace, path, data, "search space")
