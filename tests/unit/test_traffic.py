"""Traffic profiles: windows, the record's round trip, and what counts as drift."""

from __future__ import annotations

import pytest

from station.bench import traffic
from station.errors import StationError
from station.recipes import captures


def profile(prompt_mean: float = 1000, output_mean: float = 100, host: str = "dgx01") -> captures.TrafficProfile:
    return captures.TrafficProfile(
        provenance=captures.Provenance(
            host=host,
            window="1h",
            captured_at="2026-11-29T10:00:00+00:00",
            recipe="r",
            config_hash="c",
            vllm_version="0.32.0",
        ),
        requests=3600,
        requests_per_s=1.0,
        concurrency_mean=12.5,
        prompt_tokens=captures.Lengths(mean=prompt_mean, p50=900, p90=2000, p99=5000),
        generation_tokens=captures.Lengths(mean=output_mean, p50=90, p90=200, p99=500),
        prefix_cache_hit_rate=0.8,
        chat_share=1.0,
    )


@pytest.mark.parametrize(("window", "seconds"), [("30s", 30), ("5m", 300), ("1h", 3600), ("2d", 172800)])
def test_windows_are_prometheus_durations(window: str, seconds: int) -> None:
    assert traffic.seconds(window) == seconds


@pytest.mark.parametrize("window", ["1 hour", "0m", "5", "1w", ""])
def test_a_window_that_is_not_a_duration_is_refused_with_the_format(window: str) -> None:
    with pytest.raises(StationError, match="use a number and a unit"):
        traffic.seconds(window)


def test_a_profile_is_written_and_read_back_and_the_latest_is_found(tmp_path) -> None:
    first = captures.write(profile(), tmp_path)
    later = profile(prompt_mean=2000)
    later.provenance.captured_at = "2026-11-29T11:00:00+00:00"
    second = captures.write(later, tmp_path)
    assert captures.read(first) == profile()
    assert captures.latest(tmp_path, "dgx01") == second
    with pytest.raises(StationError, match="no captured traffic profile for dgx02"):
        captures.latest(tmp_path, "dgx02")


def test_a_file_that_is_not_a_profile_is_refused_naming_it(tmp_path) -> None:
    path = tmp_path / "dgx01-x.yml"
    path.write_text("requests: many\n")
    with pytest.raises(StationError, match=f"{path} is not a captured traffic profile"):
        captures.read(path)


@pytest.mark.parametrize(
    ("prompt_mean", "output_mean", "moved"),
    [
        (1000, 100, []),
        (1900, 55, []),
        (2100, 100, ["prompt tokens, mean"]),
        (1000, 40, ["generated tokens, mean"]),
    ],
)
def test_drift_is_a_move_beyond_the_ratio_either_way(prompt_mean, output_mean, moved) -> None:
    drifts = traffic.drift(profile(), profile(prompt_mean, output_mean))
    assert [row.quantity for row in drifts if row.beyond(2.0)] == moved


def test_the_drift_threshold_is_the_one_the_alert_uses() -> None:
    assert traffic.drift_ratio() == 2.0
