"""A new configuration takes over from a healthy engine through the router, under load, with no failed request."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import openai
import pytest
import requests
import yaml

from station import paths, render
from tests.integration.conftest import API_URL, ENGINE, Invocation, invoke, succeeded

CANDIDATE = f"{ENGINE}-candidate"


@dataclass
class StreamingClients:
    """Clients streaming short chats through the router, in threads, until stopped; every outcome counted.

    Paced: on 2 cores the candidate engine starts beside the live one, so a client that keeps the live engine
    busy all the time would starve the candidate's start."""

    api_key: str
    model: str
    threads: int = 2
    pause_s: float = 0.5
    served: int = 0
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _chat_until_stopped(self) -> None:
        client = openai.OpenAI(base_url=f"{API_URL}/v1", api_key=self.api_key, max_retries=0, timeout=120)
        while not self._stop.is_set():
            try:
                stream = client.chat.completions.create(
                    model=self.model,
                    messages=[{"role": "user", "content": "hi"}],
                    max_tokens=32,
                    stream=True,
                    extra_body={"ignore_eos": True},  # random weights may end early; every answer is 32 tokens
                )
                finish = [chunk.choices[0].finish_reason for chunk in stream if chunk.choices][-1]
                if finish != "length":
                    raise AssertionError(f"finish reason {finish}")
                with self._lock:
                    self.served += 1
                self._stop.wait(self.pause_s)
            except Exception as error:  # every failure a client would see is the measurement
                with self._lock:
                    self.failures.append(f"{type(error).__name__}: {error}")

    def __enter__(self) -> StreamingClients:
        self._workers = [threading.Thread(target=self._chat_until_stopped) for _ in range(self.threads)]
        for worker in self._workers:
            worker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for worker in self._workers:
            worker.join(timeout=180)


def router_workers() -> list[str]:
    return requests.get(f"{API_URL}/list_workers", timeout=10).json()["urls"]


def variant(tmp_path, **args) -> str:
    """cpu-smoke with other engine arguments, as a recipe file of its own."""
    data = yaml.safe_load((paths.RECIPES / "cpu-smoke.yml").read_text())
    data["name"] = "cpu-smoke-variant"
    data["engine"]["args"] |= args
    path = tmp_path / "cpu-smoke-variant.yml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@dataclass(frozen=True)
class Promotion:
    run: Invocation
    clients: StreamingClients
    engine_before: str
    engine_after: str
    workers_after: list[str]


@pytest.fixture(scope="module")
def promotion(first_deploy, docker_client, api_key, smoke, tmp_path_factory) -> Promotion:
    """A config-changing deploy while clients stream through the router; cpu-smoke is promoted back after."""
    new = variant(tmp_path_factory.mktemp("variant"), **{"max-num-seqs": 128})
    before = docker_client.containers.get(ENGINE).id
    with StreamingClients(api_key, smoke.model.served_name) as clients:
        run = invoke("deploy", "--recipe", new, "--no-agent-check")
    outcome = Promotion(run, clients, before, docker_client.containers.get(ENGINE).id, router_workers())
    print(f"\nduring the promotion: {clients.served} chats served, {len(clients.failures)} failed, {run.seconds:.0f} s")
    print("\n".join(sorted(set(clients.failures))[:5]))
    yield outcome
    succeeded(invoke("deploy", "--no-agent-check"))


def test_a_new_configuration_takes_over_with_no_failed_request(promotion) -> None:
    succeeded(promotion.run)
    assert promotion.clients.failures == []
    assert promotion.clients.served > 0


def test_the_engine_runs_the_new_configuration_alone_behind_the_router(promotion, docker_client) -> None:
    assert promotion.engine_after != promotion.engine_before
    labels = docker_client.containers.get(ENGINE).labels
    assert labels["io.station.recipe"] == "cpu-smoke-variant"
    assert promotion.workers_after == [f"http://{ENGINE}:8000"]
    assert not docker_client.containers.list(all=True, filters={"name": f"^{CANDIDATE}$"})


def test_a_candidate_that_cannot_start_leaves_the_live_engine_untouched(
    promotion, docker_client, api_key, smoke
) -> None:
    """It is refused in seconds (no health timeout), and the live engine, its container and the router stay."""
    live = docker_client.containers.get(ENGINE)
    workers = router_workers()
    run = invoke("deploy", "--recipe", str(paths.ROOT / "tests" / "fixtures" / "recipes" / "cpu-smoke-unservable.yml"))
    print(f"\nthe unservable candidate was refused after {run.seconds:.0f} s (the deploy, checks included)")
    assert run.returncode == 1, run.output
    for text in (
        "The candidate engine for recipe cpu-smoke-unservable failed",
        "The live engine (recipe cpu-smoke-variant) was not touched and is serving",
        "max_model_len (65536) is greater than the derived max_model_len",
    ):
        assert text in run.output, run.output
    assert docker_client.containers.get(ENGINE).id == live.id
    assert router_workers() == workers
    assert not docker_client.containers.list(all=True, filters={"name": f"^{CANDIDATE}$"})
    client = openai.OpenAI(base_url=f"{API_URL}/v1", api_key=api_key, max_retries=0)
    reply = client.chat.completions.create(
        model=smoke.model.served_name, messages=[{"role": "user", "content": "hi"}], max_tokens=4
    )
    assert reply.usage.completion_tokens == 4
    assert render.config_hash(smoke) != live.labels["io.station.config"]  # still the variant, untouched
