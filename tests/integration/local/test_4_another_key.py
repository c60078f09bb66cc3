"""A deploy from another checkout of station over the deployment this one runs: that checkout has its own controller
state, so its own API key. It takes the deployment over with its key, engine and router together, and says so; the
old key is refused from then on. (Before, such a deploy replaced the engine, then failed at the router's health wait
and said no more: the router still held the old key, which station no longer had.)

Last before `down`: the deployment answers the other checkout's key afterwards."""

from __future__ import annotations

import openai
import pytest

from tests.integration.conftest import API_URL, Invocation, invoke, succeeded


def ask(key: str, model: str) -> int:
    """Output tokens of a chat through the router, asked with `key`."""
    client = openai.OpenAI(base_url=f"{API_URL}/v1", api_key=key, max_retries=0)
    reply = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hi"}], max_tokens=2, extra_body={"ignore_eos": True}
    )
    return reply.usage.completion_tokens


@pytest.fixture(scope="module")
def taken_over(first_deploy, tmp_path_factory) -> tuple[Invocation, str]:
    """`invoke deploy --host local` from another checkout's state (a fresh one: a key of its own), and that key."""
    other = tmp_path_factory.mktemp("another-checkout")
    env = {"STATION_STATE_DIR": str(other / "state"), "STATION_RESULTS_DIR": str(other / "results")}
    run = invoke("deploy", "--host", "local", "--no-agent-check", env=env)
    return run, (other / "state" / "secrets" / "local" / "vllm_api_key").read_text().strip()


def test_a_deploy_with_another_key_takes_the_deployment_over_and_says_so(taken_over, api_key) -> None:
    run, other_key = taken_over
    succeeded(run)
    assert other_key != api_key
    assert "The router on local ran with another API key" in run.output
    assert "Clients that send the old key are refused from now on" in run.output


def test_the_deployment_answers_the_new_key_and_refuses_the_old(taken_over, api_key, smoke) -> None:
    _, other_key = taken_over
    assert ask(other_key, smoke.model.served_name) == 2
    with pytest.raises(openai.AuthenticationError):
        ask(api_key, smoke.model.served_name)
