"""The regression gate: a run against a baseline run, within margins, or the reasons it is not."""

from __future__ import annotations

from dataclasses import dataclass

from station.bench.records import IndexEntry
from station.errors import StationError
from station.recipes.recipe import BenchProfile, Recipe


@dataclass(frozen=True)
class Margins:
    """How much worse than the baseline a run may be, in percent."""

    throughput_drop_pct: float = 5.0
    ttft_p99_rise_pct: float = 10.0


def margins(
    configured: dict[str, float], throughput_drop_pct: object = None, ttft_p99_rise_pct: object = None
) -> Margins:
    """The margins in force: the command line's where given, else the configuration's (invoke.yaml), else ours."""
    base = Margins(**configured)
    return Margins(
        throughput_drop_pct=base.throughput_drop_pct if throughput_drop_pct is None else float(throughput_drop_pct),
        ttft_p99_rise_pct=base.ttft_p99_rise_pct if ttft_p99_rise_pct is None else float(ttft_p99_rise_pct),
    )


def change_pct(baseline: float, current: float) -> float:
    return (current - baseline) / baseline * 100


def regressions(baseline: IndexEntry, current: IndexEntry, margins: Margins) -> list[str]:
    """What got worse beyond its margin, with by how much; empty when the run passes."""
    found = []
    throughput = change_pct(baseline.output_throughput, current.output_throughput)
    if -throughput > margins.throughput_drop_pct:
        found.append(
            f"output throughput fell {-throughput:.1f}% ({baseline.output_throughput:,.0f} → "
            f"{current.output_throughput:,.0f} tok/s; margin {margins.throughput_drop_pct:g}%)"
        )
    ttft = change_pct(baseline.p99_ttft_ms, current.p99_ttft_ms)
    if ttft > margins.ttft_p99_rise_pct:
        found.append(
            f"TTFT p99 rose {ttft:.1f}% ({baseline.p99_ttft_ms:,.0f} → {current.p99_ttft_ms:,.0f} ms; "
            f"margin {margins.ttft_p99_rise_pct:g}%)"
        )
    return found


def unusable_baseline(baseline: IndexEntry, recipe: Recipe) -> str | None:
    """Why a stored run cannot be the baseline of a random-profile run of this recipe; None when it can."""
    if baseline.kind == "agentic":
        return f"{baseline.run_id} replayed an agentic profile, not the recipe's random one"
    if baseline.recipe != recipe.name:
        return f"{baseline.run_id} measured recipe {baseline.recipe}, not {recipe.name}"
    if baseline.profile is not None and baseline.profile != recipe.bench.model_dump():
        measured = BenchProfile.model_validate(baseline.profile)
        return f"{baseline.run_id} measured another profile ({_profile(measured)}, not {_profile(recipe.bench)})"
    reason = baseline.invalid
    return f"{baseline.run_id} was {reason}" if reason else None


def unlike(baseline: IndexEntry, current: IndexEntry) -> str | None:
    """Why a finished run cannot be judged against the baseline: another GPU, or for CPU engines another CPU,
    measures another thing (two machines of one kind measured the same code 2.25x apart)."""
    if baseline.gpu != current.gpu:
        return f"{baseline.run_id} ran on {baseline.gpu}, this run on {current.gpu}"
    if current.gpu == "none" and baseline.cpu != current.cpu:
        return (
            f"{baseline.run_id} ran on the CPU {baseline.cpu or 'it did not record'}, "
            f"this run on {current.cpu or 'a CPU it did not record'}"
        )
    return None


def _profile(profile: BenchProfile) -> str:
    return f"{profile.input_len} in / {profile.output_len} out, {profile.concurrency} concurrent"


def require_usable_baseline(baseline: IndexEntry, recipe: Recipe) -> None:
    refused = unusable_baseline(baseline, recipe)
    if refused:
        raise StationError(f"not a usable baseline: {refused}", "pick a valid run of the same recipe and profile")


def require_no_regression(baseline: IndexEntry, current: IndexEntry, margins: Margins) -> None:
    """Refuse a run measured on another GPU than its baseline, or worse than it beyond the margins."""
    different = unlike(baseline, current)
    if different:
        raise StationError(
            f"not comparable with {baseline.run_id}: {different}; nothing was judged a regression",
            "gate against a run measured on this machine (its GPU, or for a CPU engine its CPU)",
        )
    regressed = regressions(baseline, current, margins)
    if regressed:
        raise StationError(f"regression against {baseline.run_id}: " + "; ".join(regressed), "compare: invoke compare")
