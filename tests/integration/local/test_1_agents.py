"""What coding agents send, against the deployed cpu-smoke engine: `invoke agent-check` and the `openai` SDK itself."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import jsonschema
import openai
import pytest
import yaml

from station import paths
from station.deploy import agent_check
from tests.integration.conftest import (
    API_URL,
    ENGINE,
    agent_check_rows,
    at_the_suites_endpoint,
    invoke,
    router_workers,
    serving,
    succeeded,
)

CAPABILITIES = [
    "chat",
    "streaming chat",
    "tools, auto",
    "tools, auto, streamed",
    "named tool, schema-valid arguments",
    "tool-result turn",
    "prompt near the context limit",
    "prompt over the context limit refused",
    "image to a text-only model refused",
]


@pytest.fixture(scope="module")
def checked(first_deploy):
    return succeeded(invoke("agent-check", "--host", "local"))


@pytest.fixture(scope="module")
def client(api_key) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{API_URL}/v1", api_key=api_key, max_retries=0)


def row(output: str, capability: str) -> str:
    (line,) = agent_check_rows(output, capability)
    return line


def test_deploy_reports_what_agents_send_before_it_reports_deployed(first_deploy) -> None:
    output = first_deploy.output
    assert output.index("What coding agents send, against local") < output.index("Deployed cpu-smoke on local")


@pytest.mark.parametrize("capability", CAPABILITIES)
def test_agent_check_passes_on_cpu_smoke(checked, capability: str) -> None:
    assert "│ pass " in row(checked.output, capability), checked.output


def test_reasoning_is_skipped_where_the_recipe_sets_no_parser(checked) -> None:
    assert "skipped: the recipe sets no reasoning parser" in row(checked.output, "reasoning kept apart")


def test_a_named_tool_comes_back_with_schema_valid_arguments(client, smoke) -> None:
    reply = client.chat.completions.create(
        model=smoke.model.served_name,
        messages=agent_check.ASK,
        tools=[agent_check.TOOL],
        tool_choice={"type": "function", "function": {"name": "open_file"}},
        max_tokens=agent_check.ARGUMENT_TOKENS,
    )
    (call,) = reply.choices[0].message.tool_calls
    assert call.function.name == "open_file"
    jsonschema.validate(json.loads(call.function.arguments), agent_check.TOOL_SCHEMA)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_tools_with_auto_choice_are_served(client, smoke, stream: bool) -> None:
    reply = client.chat.completions.create(
        model=smoke.model.served_name,
        messages=agent_check.ASK,
        tools=[agent_check.TOOL],
        tool_choice="auto",
        max_tokens=8,
        stream=stream,
    )
    finish = [c.finish_reason for chunk in reply for c in chunk.choices] if stream else [reply.choices[0].finish_reason]
    assert {"stop", "length", "tool_calls"} & set(finish)


@pytest.fixture(scope="module")
def without_tool_parser(first_deploy, docker_client, smoke, tmp_path_factory):
    """cpu-smoke deployed without its tool parser over a live cpu-smoke: agent-check fails on the candidate, which
    never takes traffic; cpu-smoke is deployed again after the tests if it no longer serves."""
    data = yaml.safe_load((paths.RECIPES / "cpu-smoke.yml").read_text())
    data["name"] = "cpu-smoke-no-tools"
    for flag in ("enable-auto-tool-choice", "tool-call-parser"):
        del data["engine"]["args"][flag]
    path = tmp_path_factory.mktemp("recipes") / "no-tools.yml"
    path.write_text(yaml.safe_dump(data))
    try:
        yield invoke("deploy", "--host", "local", "--recipe", str(path))
    finally:
        if not serving(docker_client, smoke):
            succeeded(invoke("deploy", "--host", "local"))


@pytest.fixture(scope="module")
def live_engine_before(docker_client, first_deploy) -> str:
    return docker_client.containers.get(ENGINE).id


def test_without_a_tool_parser_deploy_fails_naming_the_flag(live_engine_before, without_tool_parser) -> None:
    run = without_tool_parser
    assert run.returncode == 1, run.output
    assert "coding agents cannot use the endpoint on local: tools, auto, tools, auto, streamed," in run.output
    assert "│ FAIL " in row(run.output, "tools, auto") and "--enable-auto-tool-choice" in run.output
    assert "set engine.args enable-auto-tool-choice: true and tool-call-parser" in run.output
    assert "Deployed cpu-smoke-no-tools" not in run.output
    assert "Traceback" not in run.output


def test_a_candidate_agents_cannot_use_never_takes_the_traffic(
    docker_client, live_engine_before, without_tool_parser
) -> None:
    assert "The candidate was removed; the live engine (recipe cpu-smoke) was not touched" in without_tool_parser.output
    live = docker_client.containers.get(ENGINE)
    assert live.id == live_engine_before and live.labels["io.station.recipe"] == "cpu-smoke"
    assert not docker_client.containers.list(all=True, filters={"name": f"^{ENGINE}-candidate$"})
    assert router_workers() == [f"http://{ENGINE}:8000"]


def readme_snippet() -> str:
    section = (paths.ROOT / "README.md").read_text().split("## Use it from a coding agent", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    return code


def test_the_readmes_agent_snippet_runs_as_written(first_deploy, tmp_path) -> None:
    (tmp_path / ".station").symlink_to(paths.STATE)  # the snippet reads the key from the checkout's .station/
    (tmp_path / "snippet.py").write_text(at_the_suites_endpoint(readme_snippet()))
    run = subprocess.run(
        [sys.executable, "snippet.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip(), "the stream printed nothing"
