"""The search: an Optuna study over the space, then the best configuration and the running one measured again.

State lives in results/tune/<tune id>/: the study in study.db (Optuna's
SQLite storage, written after every trial) and the settings, the A/B rounds
and the verdict in tune.json. An interrupted tune (Ctrl-C, a lost connection)
resumes when the same command runs again: same host, recipe, space, profile.
The trial it was in is counted as interrupted and sampled afresh.

No claim rests on a single trial: the best feasible configuration and the
one the host runs are measured again on the held-back engine, interleaved
(A B A B), and the winner is written as a recipe only when it beats the
running one on the objective there, within the constraints.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from statistics import mean
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState
from pydantic import BaseModel
from rich.console import Console

from station import paths
from station.errors import StationError
from station.recipes.profiles import AgenticProfile
from station.recipes.recipe import Recipe
from station.tune.space import SearchSpace, candidate, render_values
from station.tune.trials import Measurement

TUNES = paths.RESULTS / "tune"
SCHEMA_VERSION = 1

# Measures one configuration (the recipe, the flag values it was given) into a folder: station.tune.trials on a host.
# A sampler that keeps proposing measured configurations has run out of new ones (a small integer range).
ASKS_PER_TRIAL = 20
Measure = Callable[[Recipe, dict[str, Any], Path], Measurement]


class Verdict(BaseModel):
    """The interleaved re-measurement: the running configuration (A) and the best trial (B), round by round."""

    rounds: list[tuple[Measurement, Measurement]] = []
    a_mean: float | None = None
    b_mean: float | None = None
    b_within_constraints: bool = False
    beats: bool = False
    said: str = ""


class TuneRun(BaseModel):
    schema_version: int = SCHEMA_VERSION
    tune_id: str
    host: str
    base: str  # the recipe the trials start from, as `extends` names it
    base_name: str
    space: SearchSpace
    profile: AgenticProfile
    trials: int
    ab_rounds: int
    definition_digest: str
    started: str
    best_trial: int | None = None
    verdict: Verdict | None = None
    winner: str | None = None  # the winner's recipe file, relative to the results folder
    finished: str | None = None

    @property
    def folder(self) -> Path:
        return TUNES / self.tune_id

    @property
    def storage(self) -> str:
        return f"sqlite:///{self.folder / 'study.db'}"

    def save(self) -> None:
        paths.write_whole(self.folder / "tune.json", self.model_dump_json(indent=2) + "\n")


def definition_digest(base: Recipe, space: SearchSpace, profile: AgenticProfile, trials: int, ab_rounds: int) -> str:
    settings = [base.model_dump_json(), space.model_dump_json(), profile.model_dump_json(), trials, ab_rounds]
    return hashlib.sha256(repr(settings).encode()).hexdigest()


def unfinished(host: str, digest: str) -> TuneRun | None:
    """The newest unfinished tune of exactly these settings on this host."""
    for state in sorted(TUNES.glob(f"*-{host}-*/tune.json"), reverse=True):
        run = TuneRun.model_validate_json(state.read_text())
        if run.finished is None and run.definition_digest == digest:
            return run
    return None


def start_or_resume(
    host: str,
    base_ref: str,
    base: Recipe,
    space: SearchSpace,
    profile: AgenticProfile,
    trials: int,
    ab_rounds: int,
    fresh: bool,
) -> TuneRun:
    digest = definition_digest(base, space, profile, trials, ab_rounds)
    found = None if fresh else unfinished(host, digest)
    if found:
        return found
    now = datetime.now(UTC)
    tune_id = f"{now:%Y%m%dT%H%M%SZ}-{host}-{base.name}-{space.name}"
    taken = sum(1 for _ in TUNES.glob(f"{tune_id}*"))
    return TuneRun(
        tune_id=f"{tune_id}-{taken + 1}" if taken else tune_id,  # two tunes started in one second
        host=host,
        base=base_ref,
        base_name=base.name,
        space=space,
        profile=profile,
        trials=trials,
        ab_rounds=ab_rounds,
        definition_digest=digest,
        started=now.isoformat(timespec="seconds"),
    )


def study(run: TuneRun) -> optuna.Study:
    """The run's study, created or loaded; trials a previous run left running were interrupted."""
    optuna.logging.set_verbosity(logging.WARNING)
    run.folder.mkdir(parents=True, exist_ok=True)
    sampler = optuna.samplers.TPESampler(seed=0)  # it reads each trial's constraints (Trial.set_constraint)
    found = optuna.create_study(
        study_name=run.tune_id, storage=run.storage, direction=run.space.direction, sampler=sampler, load_if_exists=True
    )
    for stale in found.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        found.tell(stale.number, state=TrialState.FAIL)  # interrupted: it never got a measurement
    return found


def counted(found: optuna.Study) -> list[FrozenTrial]:
    """Trials that ran to a verdict (measured, or refused by vLLM or at start); interrupted ones do not count."""
    return [trial for trial in found.get_trials(deepcopy=False) if "measurement" in trial.user_attrs]


def interrupted(found: optuna.Study) -> list[FrozenTrial]:
    states = (TrialState.FAIL,)
    return [trial for trial in found.get_trials(deepcopy=False, states=states) if "measurement" not in trial.user_attrs]


def measurement(trial: FrozenTrial) -> Measurement:
    return Measurement.model_validate(trial.user_attrs["measurement"])


def feasible(trial: FrozenTrial) -> bool:
    return trial.state == TrialState.COMPLETE and all(excess <= 0 for excess in trial.constraints.values())


def ranked(run: TuneRun, found: optuna.Study) -> list[FrozenTrial]:
    """Feasible trials best first, then those outside the constraints, then those that did not serve."""
    sign = -1 if run.space.direction == "maximize" else 1

    def key(trial: FrozenTrial) -> tuple[int, float]:
        if feasible(trial):
            return 0, sign * trial.value
        if trial.state == TrialState.COMPLETE:
            return 1, sign * trial.value
        return 2, trial.number

    return sorted(distinct(found), key=key)


def search(run: TuneRun, base: Recipe, measure: Measure, console: Console) -> optuna.Study:
    """Trials until `run.trials` distinct configurations have a verdict (or the space has no more); each one's
    record is in the study before the next starts. A configuration sampled again is told its first verdict
    (so the sampler learns it) and measured once."""
    found = study(run)
    size = run.space.size
    while (done := len(distinct(found))) < min(run.trials, size or run.trials):
        if len(found.trials) >= ASKS_PER_TRIAL * run.trials:
            console.print(f"The sampler proposed only measured configurations {len(found.trials)} times: stopping.")
            break
        trial = found.ask()
        values = run.space.suggest(trial)
        same = _measured_before(found, values)
        if same:
            trial.set_user_attr("same_as", same.number)
            _tell(found, trial, run.space, measurement(same))
            continue
        console.rule(f"Trial {done + 1} of {run.trials}: {render_values(values)}")
        recipe = candidate(base, values, f"{base.name}-trial{trial.number}")
        taken = measure(recipe, values, run.folder / f"trial{trial.number}")
        _tell(found, trial, run.space, taken)
        console.print(f"  {describe(run.space, taken)}")
    if size is not None and size < run.trials:
        console.print(f"The space holds {size} configurations: each was measured once.")
    return found


def distinct(found: optuna.Study) -> list[FrozenTrial]:
    """The trials that measured a configuration (not the repeats, which take their first verdict)."""
    return [trial for trial in counted(found) if "same_as" not in trial.user_attrs]


def _measured_before(found: optuna.Study, values: dict[str, Any]) -> FrozenTrial | None:
    for trial in counted(found):
        if trial.user_attrs.get("measurement", {}).get("values") == values:
            return trial
    return None


def _tell(found: optuna.Study, trial: optuna.Trial, space: SearchSpace, taken: Measurement) -> None:
    trial.set_user_attr("measurement", taken.model_dump(mode="json"))
    if not taken.valid:
        found.tell(trial, state=TrialState.FAIL)
        return
    figures = taken.figures()
    for metric, excess in space.violations(figures).items():
        trial.set_constraint(metric, excess)
    found.tell(trial, figures[space.objective])


def describe(space: SearchSpace, taken: Measurement) -> str:
    if taken.error:
        return f"[red]did not serve[/]: {taken.error}"
    if not taken.valid:
        return f"[red]not a valid measurement[/]: {'; '.join(taken.problems)}"
    figures = taken.figures()
    outside = [metric for metric, excess in space.violations(figures).items() if excess > 0]
    limits = f"[yellow]outside {', '.join(outside)}[/]" if outside else "within the constraints"
    return (
        f"{space.objective} {figures[space.objective]:,.2f}, TTFT p99 {figures['p99_ttft_ms']:,.0f} ms, "
        f"per-session p10 {figures['per_session_tok_s_p10']:,.2f} tok/s; {limits} ({taken.seconds:.0f} s)"
    )


def best(run: TuneRun, found: optuna.Study) -> FrozenTrial | None:
    top = ranked(run, found)
    return top[0] if top and feasible(top[0]) else None


def interleave(
    run: TuneRun, base: Recipe, winner: Recipe, values: dict[str, Any], measure: Measure, console: Console
) -> Verdict:
    """A (the running configuration) and B (the best trial), A B A B on the held-back engine; resumable by round."""
    verdict = run.verdict or Verdict()
    for index in range(len(verdict.rounds), run.ab_rounds):
        console.rule(f"Interleaved re-measurement, round {index + 1} of {run.ab_rounds}: A then B")
        out = run.folder / f"ab-round{index + 1}"
        a = measure(base, {}, out / "a-running")
        console.print(f"  A (running): {describe(run.space, a)}")
        b = measure(winner, values, out / "b-best")
        console.print(f"  B (best trial): {describe(run.space, b)}")
        verdict.rounds.append((a, b))
        run.verdict = verdict
        run.save()
    return judge(run.space, verdict)


def judge(space: SearchSpace, verdict: Verdict) -> Verdict:
    """B beats A when every round of both is valid, B meets the constraints in every round, and B is better than
    the A measured beside it in every round (paired: the host's drift between rounds does not decide it)."""
    if not all(a.valid and b.valid for a, b in verdict.rounds):
        said = "a re-measurement was not valid (see the rounds); nothing is claimed"
        return verdict.model_copy(update={"beats": False, "said": said})
    pairs = [(a.figures()[space.objective], b.figures()[space.objective]) for a, b in verdict.rounds]
    a_mean, b_mean = mean(a for a, _ in pairs), mean(b for _, b in pairs)
    wins = sum(1 for a, b in pairs if (b > a if space.direction == "maximize" else b < a))
    within = all(all(e <= 0 for e in space.violations(b.figures()).values()) for _, b in verdict.rounds)
    figures = f"{space.objective} {b_mean:,.2f} vs {a_mean:,.2f}" + (f" ({b_mean / a_mean:.2f}x)" if a_mean else "")
    rounds = f"better in {wins} of {len(pairs)} rounds"
    beats = within and wins == len(pairs)
    if beats:
        said = f"the best trial beats the running configuration: {figures}, {rounds}"
    elif not within:
        said = f"the best trial broke a constraint when measured again ({figures}): nothing beat the running one"
    else:
        said = f"nothing beat the running configuration: {figures}, the best trial {rounds}"
    return verdict.model_copy(
        update={"a_mean": a_mean, "b_mean": b_mean, "b_within_constraints": within, "beats": beats, "said": said}
    )


def require_trials(trials_wanted: int) -> None:
    if trials_wanted < 1:
        raise StationError(f"--trials {trials_wanted}: a search needs at least one trial", "e.g. --trials 12")
