"""The real client: the Cline CLI, configured by the README's own lines, runs a task against the CPU endpoint.

The tiny model's answers are noise, so the task itself may go nowhere; what
must hold is that Cline's requests are served (its usage shows output tokens)
and that the engine counted them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from station import paths
from tests.integration.conftest import ENGINE_URL, README_API_URL, at_the_suites_endpoint

PINNED = paths.ROOT / "tests" / "agents" / "cline"


@pytest.fixture(scope="module")
def cline_bin(tmp_path_factory) -> Path:
    """The pinned Cline CLI from its lock file (install scripts off), in a temporary folder.

    `npm install --no-save` rather than `npm ci`: the lock cannot list the
    other platforms' optional binaries Cline declares (npm/cli#4828), which
    `npm ci` then refuses; the versions and hashes it does list are kept.
    """
    folder = tmp_path_factory.mktemp("cline")
    for name in ("package.json", "package-lock.json"):
        shutil.copy(PINNED / name, folder / name)
    npm = shutil.which("npm")
    assert npm, "npm is needed for the Cline test (.ci/setup installs it)"
    argv = [npm, "install", "--no-save", "--ignore-scripts", "--no-audit", "--no-fund"]
    done = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "node_modules" / ".bin"


def readme_cline_lines() -> list[str]:
    section = (paths.ROOT / "README.md").read_text().split("## Use it from a coding agent", 1)[1].split("\n## ", 1)[0]
    block = next(code for code in re.findall(r"```sh\n(.*?)```", section, re.DOTALL) if "cline auth" in code)
    return [line for line in block.splitlines() if line.startswith("cline ")]  # npm install -g: the fixture's pin


def engine_requests(api_key: str) -> float:
    """The engine's own count of finished requests."""
    counted = requests.get(f"{ENGINE_URL}/metrics", headers={"Authorization": f"Bearer {api_key}"}, timeout=10).text
    lines = [line for line in counted.splitlines() if line.startswith("vllm:request_success_total")]
    return sum(float(line.split()[-1]) for line in lines)


@pytest.fixture(scope="module")
def cline_run(
    first_deploy, api_key, cline_bin, tmp_path_factory
) -> Iterator[tuple[subprocess.CompletedProcess[str], float]]:
    """The README's Cline lines, pointed at the suite's endpoint, run in an empty folder with their own HOME; the
    engine's requests before and after."""
    work = tmp_path_factory.mktemp("cline-work")
    (work / ".station").symlink_to(paths.STATE)  # the lines read the key from the checkout's .station/
    env = os.environ | {"HOME": str(work), "PATH": f"{cline_bin}{os.pathsep}{os.environ['PATH']}"}
    before = engine_requests(api_key)
    script = "set -e\n" + at_the_suites_endpoint("\n".join(readme_cline_lines())) + "\n"
    done = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    yield done, engine_requests(api_key) - before
    subprocess.run(["pkill", "-f", f"cline-hub-daemon --cwd {work}"], check=False)  # the CLI leaves it running


def events(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def test_the_readme_configures_cline_as_an_openai_compatible_provider() -> None:
    auth, task = readme_cline_lines()
    assert auth.startswith(f"cline auth openai-compatible --baseurl {README_API_URL}/v1")
    assert task.startswith("cline --json ")


def test_clines_requests_are_served(cline_run) -> None:
    done, served = cline_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (result,) = [event for event in events(done.stdout) if event.get("type") == "run_result"]
    print(f"\nCline: {result['finishReason']}, usage {result['aggregateUsage']}, engine served {served:.0f} request(s)")
    assert result["aggregateUsage"]["outputTokens"] > 0, result
    assert "provider reported" not in result.get("text", ""), result  # an HTTP error from the endpoint
    assert served >= 1
