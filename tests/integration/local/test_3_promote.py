"""A new configuration takes over from a healthy engine through the router, under load, with no failed request."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import openai
import pytest
import yaml

from station import paths
from station.deploy import inventory
from station.recipes import render
from tests.integration.conftest import (
    API_URL,
    ENGINE,
    Invocation,
    StreamingClients,
    cpu_dtype,
    invoke,
    router_failed_sends,
    router_workers,
    serving,
    succeeded,
)

CANDIDATE = f"{ENGINE}-candidate"
# A client waits a little longer than the router holds a request while an engine is swapped in place
SWAP_CLIENT_TIMEOUT_S = inventory.role_default("vllm_router", "vllm_router_hold_s") + 60


def variant(tmp_path, name: str = "cpu-smoke-variant", **args) -> str:
    """cpu-smoke with other engine arguments (a dtype among them pins it), as a recipe file of its own."""
    data = yaml.safe_load((paths.RECIPES / "cpu-smoke.yml").read_text())
    data["name"] = name
    data["engine"]["args"] |= args
    path = tmp_path / f"{name}.yml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def assert_untouched(run: Invocation, docker_client, live_id: str, workers: list[str]) -> None:
    """A refused candidate was removed; the live engine's container and the router's workers are as they were."""
    assert "The candidate was removed; the live engine (recipe cpu-smoke-variant) was not touched" in run.output
    assert docker_client.containers.get(ENGINE).id == live_id and router_workers() == workers
    assert not docker_client.containers.list(all=True, filters={"name": f"^{CANDIDATE}$"})


def assert_answers(api_key: str, smoke) -> None:
    """A chat through the router is answered in full (every token asked for: random weights may end early)."""
    client = openai.OpenAI(base_url=f"{API_URL}/v1", api_key=api_key, max_retries=0)
    reply = client.chat.completions.create(
        model=smoke.model.served_name,
        messages=[{"role": "user", "content": "hi"}],
        max_tokens=4,
        extra_body={"ignore_eos": True},
    )
    assert reply.usage.completion_tokens == 4


@dataclass(frozen=True)
class Promotion:
    recipe_path: str
    run: Invocation
    clients: StreamingClients
    engine_before: str
    engine_after: str
    workers_after: list[str]
    tunnels: set[Path]  # the playbooks that described the host for its forwards, one per run of them


def tunnel_logs() -> set[Path]:
    return set(paths.LOGS.glob("*-tunnel-local.log"))


@pytest.fixture(scope="module")
def promotion(first_deploy, docker_client, api_key, smoke, tmp_path_factory) -> Promotion:
    """`invoke promote` of a new configuration while clients stream through the router (the candidate passes
    agent-check, the accuracy gate and a canary replay before it takes traffic); cpu-smoke is deployed back
    after, without the agent-check (the same path, with no gate from the controller)."""
    new = variant(tmp_path_factory.mktemp("variant"), **{"max-num-seqs": 128})
    before, tunnels_before = docker_client.containers.get(ENGINE).id, tunnel_logs()
    with StreamingClients(api_key, smoke.model.served_name) as clients:
        run = invoke("promote", "--recipe", new)
    outcome = Promotion(
        new,
        run,
        clients,
        before,
        docker_client.containers.get(ENGINE).id,
        router_workers(),
        tunnel_logs() - tunnels_before,
    )
    print(f"\nduring the promotion: {clients.served} chats served, {len(clients.failures)} failed, {run.seconds:.0f} s")
    print("\n".join(sorted(set(clients.failures))[:5]))
    yield outcome
    if not serving(docker_client, smoke):
        succeeded(invoke("deploy", "--no-agent-check"))  # the in-place test below did not put cpu-smoke back


def test_a_new_configuration_takes_over_with_no_failed_request(promotion) -> None:
    succeeded(promotion.run)
    assert promotion.clients.failures == []
    assert promotion.clients.served > 0
    assert "What coding agents send, against local" in promotion.run.output
    assert "vllm_server : Remove the candidate's container, drained" in promotion.run.output
    assert "Promoted cpu-smoke-variant on local" in promotion.run.output
    # Its gates reach the engines through forwards, several times; Ansible describes the host for them once
    assert len(promotion.tunnels) == 1, sorted(promotion.tunnels)


def test_every_gate_left_its_evidence(promotion) -> None:
    folder = Path(promotion.run.output.split("the gates' evidence: ")[1].split()[0])
    record = json.loads((folder / "promotion.json").read_text())
    assert record["gates"] == ["health", "agent-check", "accuracy", "canary"]
    assert record["drift"]["exact_match_rate"] == 1.0  # max-num-seqs changes no answer
    assert record["canary"]["failed"] == 0 and record["canary"]["requests"] > 0
    assert record["replaced"]["recipe"] == "cpu-smoke"


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
    assert_answers(api_key, smoke)
    assert render.config_hash(smoke) != live.labels["io.station.config"]  # still the variant, untouched


def test_a_configuration_swapped_in_on_trial_whose_answers_drift_is_swapped_back_out(
    promotion, docker_client, api_key, smoke, tmp_path
) -> None:
    """`promote --in-place` (one GPU the model fills): the other dtype than the live engine's (which this machine's
    CPU chose) is swapped in on trial, the router holding requests, and the accuracy gate refuses it against the
    answers the live one gave before the swap; the last healthy configuration is swapped back in, and no client sees
    a failure throughout."""
    live, failed_sends = docker_client.containers.get(ENGINE), router_failed_sends(docker_client)
    other = {"bfloat16": "float32", "float32": "bfloat16"}[cpu_dtype()]
    drifting = variant(tmp_path, "cpu-smoke-drift", dtype=other)
    with StreamingClients(api_key, smoke.model.served_name, timeout_s=SWAP_CLIENT_TIMEOUT_S) as clients:
        run = invoke("promote", "--in-place", "--recipe", drifting)
    print(
        f"\nthe drifting configuration was swapped in on trial and back out after {run.seconds:.0f} s: "
        f"{clients.served} chats served, {len(clients.failures)} failed, the longest took {clients.longest_s:.1f} s"
    )
    print("\n".join(sorted(set(clients.failures))[:5]))
    assert run.returncode == 1, run.output
    assert "the candidate's answers drift from the live engine's: exact-match rate" in run.output
    assert "cpu-smoke-drift served the traffic for" in run.output
    assert "was swapped back out: cpu-smoke-variant serves again (the router held requests for up to" in run.output
    assert clients.failures == [] and clients.served > 0
    assert router_failed_sends(docker_client) == failed_sends  # out of the router while it drained, both times
    restored = docker_client.containers.get(ENGINE)
    assert restored.id != live.id  # swapped twice, in the same container name
    assert restored.labels["io.station.config"] == live.labels["io.station.config"]
    assert restored.attrs["Config"]["Image"] == live.image.id  # by the id recorded, not a tag that may be rebuilt
    assert router_workers() == [f"http://{ENGINE}:8000"]
    assert_answers(api_key, smoke)


def test_a_candidate_that_fails_the_canary_is_refused_and_changes_nothing(promotion, docker_client, tmp_path) -> None:
    """One sequence at a time cannot serve eight agents within a one-second request timeout: answers of 256 tokens
    take about 0.3 s each on the tiny model (its TPOT is about 1 ms), so the third in the queue is already late.
    The canary replay has failed requests, and the candidate is removed before the router sees it."""
    impatient = tmp_path / "impatient.yml"
    impatient.write_text(
        yaml.safe_dump(
            {
                "name": "impatient",
                "kind": "agentic",
                "description": "8 sessions that wait at most 1 s for each answer",
                "sessions": 8,
                "turns": 2,
                "shared_prefix_tokens": 512,
                "turn_input_tokens": 64,
                "output_tokens": 256,
                "timeout_s": 1,
            }
        )
    )
    live, workers = docker_client.containers.get(ENGINE), router_workers()
    one_at_a_time = variant(tmp_path, "cpu-smoke-one-seq", **{"max-num-seqs": 1})
    run = invoke("promote", "--recipe", one_at_a_time, "--canary", str(impatient), "--no-accuracy-gate")
    print(f"\nthe candidate that failed the canary was refused after {run.seconds:.0f} s")
    assert run.returncode == 1, run.output
    assert "the canary replay of impatient on the candidate failed" in run.output
    assert_untouched(run, docker_client, live.id, workers)


def test_promote_refuses_what_the_host_already_runs(promotion) -> None:
    run = invoke("promote", "--recipe", promotion.recipe_path)
    assert run.returncode == 1 and "already runs cpu-smoke-variant" in run.output and "nothing to promote" in run.output


def test_an_engine_replaced_in_place_is_drained_and_swapped_with_no_failed_request(
    promotion, docker_client, api_key, smoke
) -> None:
    """`deploy --in-place` (what a GPU the model fills gets): the engine finishes its requests and stops, the router
    holds new ones while cpu-smoke starts in the same container, and no client sees a failure. Last here: it puts
    cpu-smoke back for the modules after this one."""
    live, failed_sends = docker_client.containers.get(ENGINE), router_failed_sends(docker_client)
    with StreamingClients(api_key, smoke.model.served_name, timeout_s=SWAP_CLIENT_TIMEOUT_S) as clients:
        run = invoke("deploy", "--in-place", "--no-agent-check")
    print(
        f"\nduring the swap in place: {clients.served} chats served, {len(clients.failures)} failed, "
        f"the longest took {clients.longest_s:.1f} s; the deploy took {run.seconds:.0f} s"
    )
    print("\n".join(sorted(set(clients.failures))[:5]))
    succeeded(run)
    assert clients.failures == []
    assert router_failed_sends(docker_client) == failed_sends  # none sent to the engine draining or stopped
    assert clients.longest_s > 5  # a chat took far longer than the 0.1 s they take: held across the swap, then served
    assert "replaced in place (drain and swap): the router held new requests for up to" in run.output
    after = docker_client.containers.get(ENGINE)
    assert after.id != live.id and after.labels["io.station.config"] == render.config_hash(smoke)
    assert router_workers() == [f"http://{ENGINE}:8000"]
    assert not docker_client.containers.list(all=True, filters={"name": f"^{CANDIDATE}$"})
