"""Traffic profiles: what a benchmark replays, as data validated like recipes.

The published profile (random prompts of fixed lengths) is a recipe's own
`bench` section, replayed by vLLM's benchmark. Agentic profiles live under
recipes/profiles/: many sessions at once, each a multi-turn chat over a shared
system prompt and tool schemas, a history that grows turn by turn, short
answers and think time between turns. vLLM's benchmark cannot replay
conversations, so AIPerf does (station/bench/agentic.py says why).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Literal

from pydantic import Field, model_validator

from station import paths
from station.errors import StationError
from station.recipes.captures import TrafficProfile
from station.recipes.recipe import NAME, Recipe, _Strict, read_mapping, reject_templates, resolve_in, validated

PROFILES = paths.RECIPES / "profiles"
RANDOM = "random"  # the recipe's own bench section


class AgenticProfile(_Strict):
    """N concurrent coding-agent sessions, each `turns` requests long, every turn's prompt the whole history."""

    name: str = Field(pattern=NAME)
    kind: Literal["agentic"]
    description: str
    sessions: Annotated[int, Field(gt=0, description="Sessions at once (agents working in parallel)")]
    turns: Annotated[int, Field(ge=2, description="Requests per session; each carries the history before it")]
    shared_prefix_tokens: Annotated[int, Field(gt=0, description="System prompt and tool schemas, shared")]
    turn_input_tokens: Annotated[int, Field(gt=0, description="New tokens per turn: a tool result or message")]
    output_tokens: Annotated[int, Field(gt=0, description="Tokens generated per turn")]
    think_time_ms: Annotated[int, Field(ge=0, description="Pause between an answer and the next turn")] = 0
    per_user_target_tok_s: Annotated[float, Field(gt=0)] | None = None
    timeout_s: Annotated[int, Field(gt=0)] = 3600
    # The same seed sends the same text, which an engine's prefix cache may still hold from an earlier run:
    # runs compared on engines that served each other's text need seeds of their own.
    seed: Annotated[int, Field(ge=0, description="Seeds the text AIPerf generates")] = 0

    @model_validator(mode="after")
    def _prefix_is_shared(self) -> AgenticProfile:
        if self.shared_prefix_tokens < self.turn_input_tokens:
            raise ValueError("shared_prefix_tokens is below turn_input_tokens: an agent's prefix is its largest part")
        return self

    @property
    def longest_request_tokens(self) -> int:
        """The last turn: the prefix, every turn's input and the answers before it, and its own answer."""
        return self.shared_prefix_tokens + self.turns * (self.turn_input_tokens + self.output_tokens)

    def require_fits(self, recipe: Recipe) -> None:
        """Refuse a profile whose last turn cannot fit the recipe's context, before anything runs."""
        limit = recipe.engine.args.get("max-model-len")
        if isinstance(limit, int) and self.longest_request_tokens > limit:
            raise StationError(
                f"profile {self.name}: its last turn needs {self.longest_request_tokens} tokens "
                f"(prefix, history and answer), above {recipe.name}'s max-model-len {limit}",
                "use fewer or shorter turns, or a recipe with a longer context",
            )


def available() -> list[str]:
    return [RANDOM, *sorted(p.stem for p in PROFILES.glob("*.yml"))]


def load(name_or_path: str) -> AgenticProfile:
    path = resolve_in(PROFILES, name_or_path, "profile", available())
    data = read_mapping(path, "profile", "recipes/profiles/agentic.yml")
    reject_templates(path, data)
    return validated(AgenticProfile, path, data, "profile")


def replaying(captured: TrafficProfile, shape: AgenticProfile) -> AgenticProfile:
    """Captured traffic as a replay: its answer length, mean prompt, prefix-cache hits and load while busy,
    in `shape`'s sessions (turns, think time, timeout), which no engine metric records.

    Every turn re-sends its session's history, so the share of prompt tokens no cache held is each turn's new
    input; the shared prefix is what is left once the replay's mean prompt equals the captured one.
    """
    turns, mean_prompt = shape.turns, captured.prompt_tokens.mean
    output = max(1, round(captured.generation_tokens.mean))
    # The largest new input per turn that leaves the shared prefix at least as long (AgenticProfile's rule).
    widest = (mean_prompt - output * (turns - 1) / 2) / ((turns + 3) / 2)
    if widest < 1:
        raise StationError(
            f"the captured prompts average {mean_prompt:.0f} tokens: too few for {turns}-turn sessions "
            f"with {output}-token answers",
            f"replay it in a profile with fewer turns than {shape.name}'s {turns} (--profile)",
        )
    uncached = (1 - (captured.prefix_cache_hit_rate or 0.0)) * mean_prompt
    turn_input = max(1, min(round(uncached), math.floor(widest)))
    source = captured.provenance
    return AgenticProfile(
        name=f"{re.sub(r'[^a-z0-9.-]', '-', source.host.lower())}-traffic",
        kind="agentic",
        description=f"the traffic captured on {source.host} over {source.window} to {source.captured_at} "
        f"({captured.requests} requests), replayed in {shape.name}'s sessions",
        sessions=max(1, round(captured.in_flight_p90 or captured.concurrency_mean)),
        turns=turns,
        shared_prefix_tokens=round(mean_prompt - turn_input * (turns + 1) / 2 - output * (turns - 1) / 2),
        turn_input_tokens=turn_input,
        output_tokens=output,
        think_time_ms=shape.think_time_ms,
        per_user_target_tok_s=shape.per_user_target_tok_s,
        timeout_s=shape.timeout_s,
    )
