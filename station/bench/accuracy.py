"""Accuracy drift between two configurations: the same fixed prompts at temperature 0, compared token by token.

A precision trade-off (FP16 Mamba state, an FP8 KV cache) changes numbers; this
measures how much the answers move: exact-match rate, where the first
divergence happens, and the mean absolute difference of the top-k
log-probabilities while the two answers still share their context. It is a
drift gate, not an eval: run a real eval suite (lm-eval) where you have its
data sets.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.console import Console

from station import paths
from station.deploy import actions, inventory, playbook
from station.errors import StationError
from station.recipes import render
from station.recipes.recipe import Ladder, Recipe

ACCURACY = paths.RESULTS / "accuracy"

PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    ",
    "Translate to German: The weather is nice today.",
    "Q: What is 17 times 23?\nA:",
    "Once upon a time, in a small village by the sea,",
    "The three laws of thermodynamics are",
    "SELECT name, count(*) FROM orders",
    "List the planets of the solar system in order:",
    "A haiku about GPUs:\n",
    "The main difference between TCP and UDP is",
    "import numpy as np\nx = np.",
    "In 1969, the Apollo 11 mission",
]
MAX_TOKENS = 32
TOP_K = 5


@dataclass(frozen=True)
class Thresholds:
    """Drift beyond these fails the check."""

    min_exact_match: float = 0.9
    max_logprob_diff: float = 0.05


class Drift(BaseModel):
    prompts: int
    exact_match_rate: float
    diverged: int
    mean_first_divergence: float | None  # token position, over the answers that diverge
    mean_abs_logprob_diff: float  # over shared top-k tokens while both answers have the same context
    compared_positions: int


def first_divergence(a: list[str], b: list[str]) -> int | None:
    for position, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return position
    return None if len(a) == len(b) else min(len(a), len(b))


def compare(answers_a: list[dict[str, Any]], answers_b: list[dict[str, Any]]) -> Drift:
    if [a["prompt"] for a in answers_a] != [b["prompt"] for b in answers_b]:
        raise StationError("the two probes did not answer the same prompts", "run both with the same station version")
    divergences, diffs = [], []
    for a, b in zip(answers_a, answers_b, strict=True):
        divergence = first_divergence(a["tokens"], b["tokens"])
        divergences.append(divergence)
        shared = len(a["tokens"]) if divergence is None else divergence + 1  # position `divergence` had one context
        for top_a, top_b in zip(a["top_logprobs"][:shared], b["top_logprobs"][:shared], strict=True):
            diffs += [abs(top_a[token] - top_b[token]) for token in set(top_a) & set(top_b)]
    diverged = [d for d in divergences if d is not None]
    return Drift(
        prompts=len(answers_a),
        exact_match_rate=1 - len(diverged) / len(answers_a),
        diverged=len(diverged),
        mean_first_divergence=sum(diverged) / len(diverged) if diverged else None,
        mean_abs_logprob_diff=sum(diffs) / len(diffs) if diffs else 0.0,
        compared_positions=len(diffs),
    )


def problems(drift: Drift, thresholds: Thresholds) -> list[str]:
    found = []
    if drift.exact_match_rate < thresholds.min_exact_match:
        found.append(f"exact-match rate {drift.exact_match_rate:.2f} is below {thresholds.min_exact_match:g}")
    if drift.mean_abs_logprob_diff > thresholds.max_logprob_diff:
        found.append(
            f"mean top-{TOP_K} log-probability difference {drift.mean_abs_logprob_diff:.4f} "
            f"is above {thresholds.max_logprob_diff:g}"
        )
    return found


def probe(
    host: str, recipe: Recipe, out: Path, console: Console, engine: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The deployed engine's answers to PROMPTS (greedy, with top-k log-probabilities), asked from its host;
    `engine` points the probe at another engine (the vllm_bench role's engine variables, e.g. a candidate's)."""
    extra = (
        render.bench_vars(recipe, out.name)
        | (engine or {})
        | {
            "vllm_bench_output_dir": str(out),
            "vllm_bench_probe": {
                "model": recipe.model.served_name,
                "prompts": PROMPTS,
                "max_tokens": MAX_TOKENS,
                "logprobs": TOP_K,
            },
        }
    )
    playbook.run("probe", host, extra, console)
    return json.loads((out / "probe.json").read_text())


def lm_eval_argv(recipe: Recipe, base_url: str, tasks: str) -> list[str]:
    """An lm-eval run against the OpenAI endpoint (the optional hook for a real eval suite)."""
    if shutil.which("lm_eval") is None:
        raise StationError(
            "lm-eval is not installed",
            "pip install 'lm-eval[api]' and make its data sets reachable, then run again with --lm-eval-tasks",
        )
    model_args = f"model={recipe.model.served_name},base_url={base_url}/v1/completions,tokenizer_backend=none"
    return ["lm_eval", "--model", "local-completions", "--model_args", model_args, "--tasks", tasks]


def run_lm_eval(argv: list[str], api_key_file: Path, out: Path) -> None:
    env = os.environ | {"OPENAI_API_KEY": api_key_file.read_text().strip()}
    if subprocess.run([*argv, "--output_path", str(out / "lm-eval")], env=env, check=False).returncode != 0:
        raise StationError("lm-eval failed", "see its output above")


@dataclass(frozen=True)
class AccuracyRun:
    folder: Path
    steps: tuple[int, int]
    drift: Drift
    problems: list[str]


def step_pair(ladder: Ladder, steps: str) -> tuple[int, int]:
    """`0,5` → (0, 5); the same step twice is allowed (a determinism check)."""
    parts = [part.strip() for part in steps.split(",")]
    last = len(ladder.steps) - 1
    if len(parts) != 2 or not all(part.isdigit() and int(part) <= last for part in parts):
        raise StationError(
            f"--steps {steps!r} is not two steps of {ladder.name}", f"steps are 0 to {last}, e.g. 0,{last}"
        )
    return int(parts[0]), int(parts[1])


def run(
    host: str, ladder: Ladder, steps: tuple[int, int], thresholds: Thresholds, console: Console, lm_eval_tasks: str = ""
) -> AccuracyRun:
    """Deploy each step, probe it (and run lm-eval when asked), compare; the same step twice is deployed once and
    probed twice, as it runs (a determinism check)."""
    inventory.host_vars(host)
    folder = ACCURACY / f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{host}-{ladder.name}-{steps[0]}-{steps[1]}"
    answers = []
    for position, step in enumerate(steps):
        recipe = ladder.recipe(step)
        console.rule(f"Probe {position + 1} of 2: step {step} ({ladder.steps[step].change})")
        if position and step == steps[0]:
            console.print(f"Step {step} is deployed already: probed again as it runs.")
        else:
            deployment = actions.deploy(host, recipe, console, in_place=True)
        out = folder / f"probe{position + 1}-step{step}"
        out.mkdir(parents=True)
        answers.append(probe(host, recipe, out, console))
        if lm_eval_tasks:
            argv = lm_eval_argv(recipe, deployment.endpoint.removesuffix("/v1"), lm_eval_tasks)
            run_lm_eval(argv, deployment.api_key_file, out)
    drift = compare(*answers)
    found = problems(drift, thresholds)
    record = {"host": host, "ladder": ladder.name, "steps": steps, "drift": drift.model_dump(), "problems": found}
    (folder / "drift.json").write_text(json.dumps(record | {"thresholds": asdict(thresholds)}, indent=2) + "\n")
    return AccuracyRun(folder, steps, drift, found)
