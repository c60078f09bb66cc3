"""`invoke profile-capture` and `profile-drift` on a window holding only the traffic this module sends."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import openai
import pytest
import yaml

from station.bench import capture, traffic
from station.recipes import captures
from tests.integration.conftest import (
    API_URL,
    SCRAPE_S,
    Invocation,
    invoke,
    prometheus_query,
    promtool,
    succeeded,
    wait_for,
)

# vLLM 0.32's buckets for vllm:request_prompt_tokens and vllm:request_generation_tokens
BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000]


@dataclass(frozen=True)
class Sent:
    prompt_tokens: int
    output_tokens: int
    requests: int
    window: str


def send(api_key: str, model: str, words: int, output_tokens: int, requests: int = 12) -> Sent:
    """Completions of one known shape, between quiet scrapes, and the window that holds exactly them."""
    # Whatever ran before is outside the window: its last counts reach Prometheus up to a scrape after it ends, and
    # the window reaches back 2 scrapes (and the command's start) before `started`. A test that swapped the engine
    # just before had its held chats counted in a window after a quiet of 3 scrapes.
    time.sleep(5 * SCRAPE_S)
    started = time.monotonic()
    client = openai.OpenAI(base_url=f"{API_URL}/v1", api_key=api_key, max_retries=0)
    counts = set()
    for _ in range(requests):
        done = client.completions.create(
            model=model, prompt=" hello" * words, max_tokens=output_tokens, extra_body={"ignore_eos": True}
        )
        counts.add(done.usage.prompt_tokens)
    time.sleep(3 * SCRAPE_S)  # the last counts are scraped
    (prompt_tokens,) = counts
    # The window ends when the command starts (a second or two from now) and holds every request, with a margin.
    return Sent(prompt_tokens, output_tokens, requests, f"{math.ceil(time.monotonic() - started) + 2 * SCRAPE_S}s")


def bucket(value: float) -> tuple[float, float]:
    upper = next(bound for bound in BUCKETS if value <= bound)
    return BUCKETS[BUCKETS.index(upper) - 1] if upper > BUCKETS[0] else 0, upper


@pytest.fixture(scope="module")
def captured(first_deploy, api_key, smoke) -> tuple[Sent, Invocation, captures.TrafficProfile]:
    sent = send(api_key, smoke.model.served_name, words=150, output_tokens=16)
    run = succeeded(invoke("profile-capture", "--window", sent.window))
    return sent, run, captures.read(captures.latest(capture.TRAFFIC_PROFILES, "local"))


def test_the_capture_counts_every_request_it_was_given(captured, smoke) -> None:
    sent, _, profile = captured
    assert profile.requests == sent.requests
    assert profile.provenance.recipe == smoke.name and profile.provenance.vllm_version == smoke.engine.vllm_version
    assert profile.chat_share == 0  # completions only, as the router counted them
    assert profile.in_flight_p90 in (None, 1)  # one request at a time, when a scrape saw it in the engine


def test_the_capture_reproduces_the_lengths_within_a_histogram_bucket(captured) -> None:
    sent, run, profile = captured
    print(f"\nsent {sent.prompt_tokens} in / {sent.output_tokens} out; captured {profile.model_dump()}")
    assert profile.prompt_tokens.mean == pytest.approx(sent.prompt_tokens)
    assert profile.generation_tokens.mean == pytest.approx(sent.output_tokens)
    low, high = bucket(sent.prompt_tokens)
    assert low <= profile.prompt_tokens.p50 <= high
    low, high = bucket(sent.output_tokens)
    assert low <= profile.generation_tokens.p90 <= high
    assert "Prompt tokens" in run.output


def test_the_capture_becomes_the_reference_the_drift_alert_reads(captured) -> None:
    sent, _, _ = captured
    # This capture's gauge: until Prometheus scrapes the new file, it still has the host's previous reference.
    written = captures.latest(capture.TRAFFIC_PROFILES, "local").name
    query = f'station_traffic_reference{{quantity="prompt_tokens_mean", profile="{written}"}}'
    assert wait_for(lambda: prometheus_query(query), 30, "the reference gauge") == pytest.approx(sent.prompt_tokens)


def test_the_same_shape_has_not_drifted(captured, api_key, smoke) -> None:
    sent = send(api_key, smoke.model.served_name, words=150, output_tokens=16, requests=4)
    run = succeeded(invoke("profile-drift", "--window", sent.window))
    assert "has drifted" not in run.output


def test_longer_answers_are_drift(captured, api_key, smoke) -> None:
    sent = send(api_key, smoke.model.served_name, words=150, output_tokens=64, requests=4)
    run = invoke("profile-drift", "--window", sent.window)
    assert run.returncode == 1, run.output
    assert "has drifted: generated tokens, mean" in run.output


# Counters sampled every scrape from 0 s to 80 s, read over the last 40 s at 80 s: promtool's series notation
# ("10x12" is 10 for 13 samples, "_x12" 12 absent ones).
COUNTERS = {
    "from before the window": ("10x12 12 14 14 14", 4),
    "born inside it (vllm-router's route counters)": ("_x12 3 5 5 5", 5),
    "restarted inside it (an engine swapped in place)": ("10x12 12 1 3 3", 2 + 1 + 2),
}


def promtool_evaluates(tmp_path, input_series: list[dict[str, str]], expr: str, expected: float) -> None:
    """`expr` at 80 s, as the pinned Prometheus' own engine evaluates it (promtool), equals `expected`."""
    test = {
        "rule_files": [],
        "evaluation_interval": f"{SCRAPE_S}s",
        "tests": [
            {
                "interval": f"{SCRAPE_S}s",
                "input_series": input_series,
                "promql_expr_test": [
                    {"expr": expr, "eval_time": "80s", "exp_samples": [{"labels": "{}", "value": expected}]}
                ],
            }
        ],
    }
    (tmp_path / "counted.test.yml").write_text(yaml.safe_dump(test))
    tmp_path.chmod(0o755)  # promtool runs as nobody
    checked = promtool("test", "rules", "/tests/counted.test.yml", volumes={str(tmp_path): "/tests"})
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("case", COUNTERS)
def test_a_counter_s_growth_is_counted_exactly(case, first_deploy, tmp_path) -> None:
    values, grew = COUNTERS[case]
    counting = traffic.Prometheus("promtool", "local", 0, SCRAPE_S)
    series = [{"series": 'vllm:request_success_total{host="local"}', "values": values}]
    promtool_evaluates(tmp_path, series, counting.counted("vllm:request_success_total", "40s"), grew)


def test_histogram_quantiles_stay_in_the_bucket_of_what_the_window_holds(first_deploy, tmp_path) -> None:
    """Eight answers of 10-20 tokens in the window's last 20 s, on an engine that had answered 20 longer ones and
    none of 10-20 before. increase() stretches the (20, 50] bucket's growth by 24/20 to the window's edge but not
    the (10, 20] bucket's, whose extrapolation stops at zero: its p90 read 32 tokens (20.7 for 16 in CI)."""
    counting = traffic.Prometheus("promtool", "local", 0, SCRAPE_S)
    buckets = {"10": "0x16", "20": "0x12 2 4 6 8", "50": "20x12 22 24 26 28"}
    series = [
        {"series": f'vllm:request_generation_tokens_bucket{{host="local", le="{le}"}}', "values": values}
        for le, values in (buckets | {"+Inf": buckets["50"]}).items()
    ]
    expr = f"histogram_quantile(0.9, {counting.counted('vllm:request_generation_tokens_bucket', '24s', by='le')})"
    promtool_evaluates(tmp_path, series, expr, 10 + 10 * 0.9)  # 8 of 8 in (10, 20]: 90% of the way through it
