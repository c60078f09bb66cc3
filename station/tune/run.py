"""invoke tune end to end: check, search, measure the best against the running configuration, write it down."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import yaml
from rich.console import Console

from station import paths
from station.bench import capture
from station.deploy import actions, inventory
from station.deploy.candidate import held_back
from station.errors import StationError
from station.recipes import profiles, render
from station.recipes import recipe as recipes
from station.recipes.profiles import AgenticProfile
from station.recipes.recipe import Recipe
from station.tune import report, search
from station.tune.search import TuneRun
from station.tune.space import SearchSpace, candidate
from station.tune.trials import Measurement, measure_held_back


def replay_for(host: str, recipe_ref: str, profile_ref: str, traffic_ref: str) -> AgenticProfile:
    """What the trials replay: the agentic profile named (default: the recipe's own), or, given `traffic_ref`
    (`latest` or a file), the traffic captured on the host in that profile's sessions."""
    profile_ref = profile_ref or recipes.load(recipe_ref).profile
    if profile_ref == profiles.RANDOM:
        agentic = ", ".join(name for name in profiles.available() if name != profiles.RANDOM)
        raise StationError("tune replays an agentic profile, not random prompts", f"give --profile ({agentic})")
    shape = profiles.load(profile_ref)
    if not traffic_ref:
        return shape
    _, captured = capture.captured_traffic(host, traffic_ref)
    return profiles.replaying(captured, shape)


def base_reference(name_or_path: str) -> str:
    """How the winner's `extends` names the recipe the tune starts from: its name if shipped, else its full path."""
    if name_or_path in recipes.available():
        return name_or_path
    return str(recipes.resolve(name_or_path).resolve())


def require_running(host: str, base: Recipe, console: Console) -> None:
    """A tune starts from the configuration the host serves: the winner is measured against it, and extends it."""
    live = actions.live_engine(host, console)
    if live.config != render.config_hash(base):
        raise StationError(
            f"the live engine on {host} runs recipe {live.recipe} (configuration {live.config}), "
            f"not {base.name} ({render.config_hash(base)})",
            f"tune from what it runs: --recipe {live.recipe} (or its file), or deploy {base.name} first",
        )


def tune(
    host: str,
    base_ref: str,
    space: SearchSpace,
    profile: AgenticProfile,
    trials: int,
    ab_rounds: int,
    fresh: bool,
    console: Console,
) -> TuneRun:
    """Search, re-measure the best against the running configuration (A B A B), write the winner and the report."""
    search.require_trials(trials)
    inventory.host_vars(host)
    base = recipes.load(base_ref)
    profile.require_fits(base)
    require_running(host, base, console)
    run = search.start_or_resume(host, base_reference(base_ref), base, space, profile, trials, ab_rounds, fresh)
    if run.folder.exists():
        console.print(f"Resuming tune {run.tune_id}: run the same command with --fresh to start over")
    run.save()

    with held_back(host, console) as hold:

        def measure(recipe: Recipe, values: dict, out: Path) -> Measurement:
            return measure_held_back(host, recipe, values, profile, out, console, hold)

        found = search.search(run, base, measure, console)
        console.print(report.console_table(run, found))
        top = search.best(run, found)
        if top is None:
            console.print(f"No trial met the constraints ({run.space.describe_constraints()}).")
        else:
            values = search.measurement(top).values
            run.best_trial = top.number
            best = candidate(base, values, f"{base.name}-trial{top.number}")
            run.verdict = search.interleave(run, base, best, values, measure, console)
            if run.verdict.beats:
                run.winner = str(write_winner(run, values).relative_to(paths.RESULTS))
    run.finished = datetime.now(UTC).isoformat(timespec="seconds")
    run.save()
    report.write(run, found)
    return run


def write_winner(run: TuneRun, values: dict) -> Path:
    """The winner as a recipe that extends the running one, with where it came from."""
    assert run.verdict is not None and run.best_trial is not None
    data = {
        "extends": run.base,
        "name": f"{run.base_name}-tuned",
        "description": f"{run.base_name}, tuned on {run.host} for profile {run.profile.name} by tune {run.tune_id}",
        "engine": {"args": values},
        "tuned": {
            "tune": run.tune_id,
            "host": run.host,
            "trial": run.best_trial,
            "profile": run.profile.name,
            "space": run.space.name,
            "objective": run.space.objective,
            "constraints": run.space.describe_constraints(),
            "verdict": run.verdict.said,
            "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    }
    path = run.folder / "winner.yml"
    path.write_text(
        f"# Written by invoke tune ({run.tune_id}); move the traffic to it through every gate with\n"
        f"#   invoke promote --host {run.host} --recipe {path}\n"
        + yaml.safe_dump(data, sort_keys=False, allow_unicode=True),
        encoding="utf-8",
    )
    recipes.load(str(path))  # a winner that does not load as a recipe is a bug here, not the user's to find
    return path
