"""A ladder run: each step of a ladder deployed, benchmarked and compared with the first, in one run.

State lives in results/ladders/<ladder run id>/state.json and is written after
every step, so an interrupted ladder (Ctrl-C, a failed step, a lost
connection) resumes at the step it had not finished when the same command runs
again: same host, same ladder definition, same steps.
"""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel
from rich.console import Console

from station import paths
from station.bench import measure
from station.deploy import actions
from station.errors import StationError
from station.recipes.recipe import Ladder

LADDERS = paths.RESULTS / "ladders"


class StepRow(BaseModel):
    """What one step measured."""

    step: int
    change: str
    run_id: str
    output_throughput: float
    p99_ttft_ms: float
    p99_tpot_ms: float
    acceptance_rate: float | None
    published: float | None
    seconds: float


class LadderRun(BaseModel):
    ladder_id: str
    ladder: str
    host: str
    steps: list[int]
    definition_digest: str
    started: str
    rows: list[StepRow] = []
    finished: str | None = None

    @property
    def folder(self) -> Path:
        return LADDERS / self.ladder_id

    @property
    def pending(self) -> list[int]:
        done = {row.step for row in self.rows}
        return [step for step in self.steps if step not in done]

    @property
    def baseline(self) -> StepRow | None:
        """The row ratios are taken against: step 0 when it ran, else the first step that did."""
        by_step = {row.step: row for row in self.rows}
        return by_step.get(0) or by_step.get(self.steps[0])

    def ratio(self, row: StepRow) -> float | None:
        return row.output_throughput / self.baseline.output_throughput if self.baseline else None

    def save(self) -> None:
        paths.write_whole(self.folder / "state.json", self.model_dump_json(indent=2) + "\n")


def select_steps(ladder: Ladder, steps: str) -> list[int]:
    """`0,3,5` → [0, 3, 5]; empty → every step."""
    last = len(ladder.steps) - 1
    if not steps:
        return list(range(last + 1))
    chosen = []
    for part in steps.split(","):
        if not (part.strip().isdigit() and int(part) <= last):
            raise StationError(
                f"{ladder.name} has no step {part.strip()!r}", f"steps are 0 to {last}, e.g. --steps 0,{last}"
            )
        chosen.append(int(part))
    return sorted(set(chosen))


def definition_digest(ladder: Ladder) -> str:
    return hashlib.sha256(ladder.model_dump_json().encode()).hexdigest()


def unfinished(ladder: Ladder, host: str, steps: list[int]) -> LadderRun | None:
    """The newest unfinished run of exactly this ladder, host and steps."""
    digest = definition_digest(ladder)
    for state in sorted(LADDERS.glob(f"*-{host}-{ladder.name}/state.json"), reverse=True):
        run = LadderRun.model_validate_json(state.read_text())
        if run.finished is None and run.steps == steps and run.definition_digest == digest:
            return run
    return None


def start(ladder: Ladder, host: str, steps: list[int]) -> LadderRun:
    now = datetime.now(UTC)
    return LadderRun(
        ladder_id=f"{now:%Y%m%dT%H%M%SZ}-{host}-{ladder.name}",
        ladder=ladder.name,
        host=host,
        steps=steps,
        definition_digest=definition_digest(ladder),
        started=now.isoformat(timespec="seconds"),
    )


def run(host: str, ladder: Ladder, steps: list[int], fresh: bool, console: Console) -> LadderRun:
    """Check every step's flags on the host, then deploy and benchmark the steps not yet measured."""
    state = None if fresh else unfinished(ladder, host, steps)
    if state and state.rows:
        done = ", ".join(str(row.step) for row in state.rows)
        console.print(f"Resuming ladder {state.ladder_id}: step(s) {done} measured, {state.pending} to go")
    state = state or start(ladder, host, steps)
    console.rule(f"Checking the flags of {len(state.pending)} step(s) with vLLM's parser on {host}")
    actions.check_args(host, [(ladder.label(index), ladder.recipe(index)) for index in state.pending], console)
    state.save()  # only a ladder whose flags parse is started
    for position, index in enumerate(state.pending, start=len(state.rows) + 1):
        console.rule(f"Step {index} ({position} of {len(steps)}): {ladder.steps[index].change}")
        state.rows.append(measure_step(host, ladder, index, state.ladder_id, console))
        state.save()
        console.print(summary_line(state, state.rows[-1]))
    state.finished = datetime.now(UTC).isoformat(timespec="seconds")
    state.save()
    return state


def measure_step(host: str, ladder: Ladder, index: int, ladder_id: str, console: Console) -> StepRow:
    started = time.monotonic()
    recipe = ladder.recipe(index)
    deployed = actions.deploy(host, recipe, console, in_place=True)
    if deployed.in_place_window_s is not None:
        console.print(f"  replaced in place: the router held requests for {deployed.in_place_window_s:.0f} s")
    bench = measure.smoke_bench(host, recipe, console, {"ladder_id": ladder_id, "step": index})
    if bench.problems:
        raise StationError(
            f"step {index} is not a valid measurement: {'; '.join(bench.problems)} ({bench.record_path})",
            "fix the cause and run the same command again: the ladder resumes at this step",
        )
    result = bench.result
    return StepRow(
        step=index,
        change=ladder.steps[index].change,
        run_id=bench.run_id,
        output_throughput=result.output_throughput,
        p99_ttft_ms=result.p99_ttft_ms,
        p99_tpot_ms=result.p99_tpot_ms,
        acceptance_rate=result.spec_decode_acceptance_rate,
        published=ladder.published(index),
        seconds=time.monotonic() - started,
    )


def summary_line(state: LadderRun, row: StepRow) -> str:
    ratio = state.ratio(row)
    versus = f", {ratio:.2f}x step {state.baseline.step}" if ratio and state.baseline is not row else ""
    return f"  step {row.step}: {row.output_throughput:,.0f} output tok/s{versus} ({row.seconds:.0f} s)"
