"""Vision input end to end: cpu-vision (the tiny vision-language model) deployed in place over what the local host
serves (one engine start: a candidate's gate, agent-check before any traffic, is test_1_agents.py's and
test_3_promote.py's), agent-check's screenshot passing through the router; then a screenshot and a broken image sent
through the router as an agent sends them. Before `another_key`, whose deploy replaces the deployment whole. A
text-only recipe refusing an image is agent-check's row on cpu-smoke (test_1_agents.py)."""

from __future__ import annotations

import openai
import pytest

from station.deploy import agent_check
from station.recipes import recipe
from tests.integration.conftest import API_URL, ENGINE, Invocation, agent_check_rows, invoke, succeeded

HOST = "local"


@pytest.fixture(scope="module")
def vision() -> recipe.Recipe:
    return recipe.load("cpu-vision")


@pytest.fixture(scope="module")
def deployed(first_deploy) -> Invocation:
    return succeeded(invoke("deploy", "--host", HOST, "--recipe", "cpu-vision", "--in-place"))


@pytest.fixture(scope="module")
def client(api_key) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{API_URL}/v1", api_key=api_key, max_retries=0)


@pytest.mark.parametrize("capability", ["screenshot, streamed", "broken image refused"])
def test_agent_check_sends_the_vision_model_images_through_the_router(deployed, capability) -> None:
    (checked,) = agent_check_rows(deployed.output, capability)
    assert "│ pass " in checked, deployed.output
    assert "image to a text-only model refused" not in deployed.output
    assert "Deployed cpu-vision on local" in deployed.output


def test_the_engine_serves_the_vision_model(deployed, docker_client, vision) -> None:
    assert docker_client.containers.get(ENGINE).labels["io.station.recipe"] == "cpu-vision"
    assert vision.model.reads_images


def test_a_screenshot_streams_an_answer_through_the_router(deployed, client, vision) -> None:
    text_only = client.chat.completions.create(
        model=vision.model.served_name, messages=[{"role": "user", "content": agent_check.LOOK}], max_tokens=1
    )
    stream = client.chat.completions.create(
        model=vision.model.served_name,
        messages=agent_check.with_image(agent_check.screenshot_url()),
        max_tokens=8,
        stream=True,
        stream_options={"include_usage": True},
        extra_body={"ignore_eos": True},
    )
    chunks = list(stream)
    (usage,) = [chunk.usage for chunk in chunks if chunk.usage]
    assert usage.completion_tokens == 8
    assert usage.prompt_tokens > text_only.usage.prompt_tokens  # the image is in the prompt, as image tokens
    assert [c.finish_reason for chunk in chunks for c in chunk.choices if c.finish_reason] == ["length"]


def test_a_broken_image_gets_a_400_that_says_so(deployed, client, vision) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(
            model=vision.model.served_name, messages=agent_check.with_image(agent_check.BROKEN_PNG), max_tokens=1
        )
    assert "image" in str(refused.value).lower()
