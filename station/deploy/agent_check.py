"""What a coding agent sends, tried against a deployed endpoint with the `openai` SDK.

Cline, Roo and OpenHands talk to an "OpenAI compatible" endpoint: streamed
chat with a system prompt, tool schemas and a growing history, native tool
calls (`tool_choice: "auto"`), tool results fed back, long prompts. Each
capability is one check here; a failing one says what the engine answered and
which recipe setting fixes it.

Random weights (the CPU path) cannot choose a tool, so the named-tool check
forces one: vLLM serves a named `tool_choice` with structured outputs, which
keep the arguments inside the tool's JSON schema with any weights.

Agents attach screenshots: a recipe whose model reads images gets one (a
screenshot-sized PNG of code, streamed) and a broken one, which must be
refused with a 400; a text-only recipe gets one too, which must be refused.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import jsonschema
import requests

if TYPE_CHECKING:
    import openai

Outcome = Literal["pass", "fail", "skip"]


@cache
def _openai() -> Any:
    """The openai SDK, imported by the first check rather than with station: it was half of the CLI's import time
    (0.55 s of 1.1 s), and most commands send no chat."""
    import openai

    return openai


TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "enum": ["README.md", "tasks.py", "pyproject.toml"]},
        "create": {"type": "boolean"},
    },
    "required": ["path", "create"],
    "additionalProperties": False,
}
# `strict` is OpenAI's way to ask for arguments that follow the schema; vLLM 0.32
# pins argument schemas only for strict tools (or all, with --tool-strict-level
# parameter), and otherwise constrains them to any JSON value.
TOOL = {
    "type": "function",
    "function": {
        "name": "open_file",
        "description": "Open a file of the repository",
        "parameters": TOOL_SCHEMA,
        "strict": True,
    },
}
SYSTEM = "You are a coding agent working in a git repository. Use the tools to read files before you answer."
ASK = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "What does the README say?"}]
OPENED = json.dumps({"path": "README.md", "create": False})
TOOL_TURN = [
    *ASK,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "open_file", "arguments": OPENED},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "# station\nSelf-host an open LLM on one GPU box."},
]
# Hints for the engine's own error messages: the recipe setting that fixes each.
HINTS = {
    "--enable-auto-tool-choice": "set engine.args enable-auto-tool-choice: true and tool-call-parser: <parser>",
    "chat template": "serve a model whose tokenizer has a chat template, or set engine.args chat-template",
    "reasoning": "set engine.args reasoning-parser for this model",
}
MAX_TOKENS = 16
# Enough for the named tool's arguments to close: the tool-call grammar allows
# free whitespace, which random weights emit for a few hundred tokens.
ARGUMENT_TOKENS = 1024
CONTEXT_MARGIN = 32  # tokens left free by the near-the-limit request
FILLER = " hello"


@dataclass(frozen=True)
class Check:
    capability: str
    outcome: Outcome
    detail: str


@dataclass(frozen=True)
class Endpoint:
    base_url: str  # ends in /v1
    api_key: str
    model: str
    reasoning: bool  # the recipe sets a reasoning parser
    images: bool = False  # the recipe's model reads images

    def client(self) -> openai.OpenAI:
        return _openai().OpenAI(base_url=self.base_url, api_key=self.api_key, max_retries=0, timeout=600)


class CheckFailed(Exception):
    """A capability that did not hold; the message is the table's detail."""


def hint_for(message: str) -> str:
    found = [hint for needle, hint in HINTS.items() if needle.lower() in message.lower()]
    return f" → {found[0]}" if found else ""


def run(endpoint: Endpoint) -> list[Check]:
    """Every capability in turn; one failing does not stop the others."""
    client = endpoint.client()
    checks: list[tuple[str, Callable[[], str]]] = [
        ("chat", lambda: chat(client, endpoint)),
        ("streaming chat", lambda: streaming_chat(client, endpoint)),
        ("tools, auto", lambda: tools_auto(client, endpoint, stream=False)),
        ("tools, auto, streamed", lambda: tools_auto(client, endpoint, stream=True)),
        ("named tool, schema-valid arguments", lambda: named_tool(client, endpoint)),
        ("tool-result turn", lambda: tool_result_turn(client, endpoint)),
        ("reasoning kept apart", lambda: reasoning_apart(client, endpoint)),
        *(
            [
                ("screenshot, streamed", lambda: screenshot(client, endpoint)),
                ("broken image refused", lambda: broken_image(client, endpoint)),
            ]
            if endpoint.images
            else [("image to a text-only model refused", lambda: image_refused(client, endpoint))]
        ),
        ("prompt near the context limit", lambda: near_context_limit(client, endpoint)),
        ("prompt over the context limit refused", lambda: over_context_limit(client, endpoint)),
    ]
    return [attempt(capability, check) for capability, check in checks]


def attempt(capability: str, check: Callable[[], str]) -> Check:
    sdk = _openai()
    try:
        detail = check()
    except CheckFailed as failure:
        return Check(capability, "fail", str(failure))
    except sdk.APIStatusError as error:
        message = _error_message(error)
        return Check(capability, "fail", f"HTTP {error.status_code}: {message}{hint_for(message)}")
    except (sdk.APIError, requests.RequestException) as error:
        return Check(capability, "fail", f"{type(error).__name__}: {error}")
    if detail.startswith("skipped"):
        return Check(capability, "skip", detail)
    return Check(capability, "pass", detail)


def _error_message(error: openai.APIStatusError) -> str:
    body = error.body if isinstance(error.body, dict) else {}
    return str(body.get("message") or error.message).strip()


def chat(client: openai.OpenAI, endpoint: Endpoint) -> str:
    reply = client.chat.completions.create(model=endpoint.model, messages=ASK, max_tokens=MAX_TOKENS)
    if not reply.usage or not reply.usage.completion_tokens:
        raise CheckFailed("the reply counts no completion tokens")
    return f"{reply.usage.prompt_tokens} prompt tokens, {reply.usage.completion_tokens} generated"


class Streamed(NamedTuple):
    chunks: int
    finish: str | None
    calls: list[Any]  # the streamed tool-call deltas
    usage: Any  # the last chunk's token counts (include_usage), or None


def _stream(client: openai.OpenAI, endpoint: Endpoint, **request: Any) -> Streamed:
    """Chunks received, the finish reason, the streamed tool-call deltas and the token counts."""
    chunks, finish, calls, usage = 0, None, [], None
    stream = client.chat.completions.create(
        model=endpoint.model, max_tokens=MAX_TOKENS, stream=True, stream_options={"include_usage": True}, **request
    )
    for chunk in stream:
        chunks += 1
        usage = chunk.usage or usage
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            calls += choice.delta.tool_calls or []
    return Streamed(chunks, finish, calls, usage)


def streaming_chat(client: openai.OpenAI, endpoint: Endpoint) -> str:
    chunks, finish, _, _ = _stream(client, endpoint, messages=ASK)
    if finish is None:
        raise CheckFailed(f"the stream ended after {chunks} chunks without a finish reason")
    return f"{chunks} chunks, finish reason {finish}"


def tools_auto(client: openai.OpenAI, endpoint: Endpoint, stream: bool) -> str:
    if stream:
        chunks, finish, calls, _ = _stream(client, endpoint, messages=ASK, tools=[TOOL], tool_choice="auto")
        return f"{chunks} chunks, {len(calls)} tool-call deltas, finish reason {finish}"
    reply = client.chat.completions.create(
        model=endpoint.model, messages=ASK, tools=[TOOL], tool_choice="auto", max_tokens=MAX_TOKENS
    )
    message = reply.choices[0].message
    return f"answered with {len(message.tool_calls or [])} tool call(s), finish reason {reply.choices[0].finish_reason}"


def named_tool(client: openai.OpenAI, endpoint: Endpoint) -> str:
    reply = client.chat.completions.create(
        model=endpoint.model,
        messages=ASK,
        tools=[TOOL],
        tool_choice={"type": "function", "function": {"name": "open_file"}},
        max_tokens=ARGUMENT_TOKENS,
    )
    calls = reply.choices[0].message.tool_calls or []
    if [call.function.name for call in calls] != ["open_file"]:
        raise CheckFailed(f"expected one call of open_file, got {[call.function.name for call in calls]}")
    try:
        arguments = json.loads(calls[0].function.arguments)
        jsonschema.validate(arguments, TOOL_SCHEMA)
    except (json.JSONDecodeError, jsonschema.ValidationError) as error:
        raise CheckFailed(f"arguments {calls[0].function.arguments!r} break the tool's schema: {error}") from error
    return f"open_file({json.dumps(arguments)})"


def tool_result_turn(client: openai.OpenAI, endpoint: Endpoint) -> str:
    reply = client.chat.completions.create(
        model=endpoint.model, messages=TOOL_TURN, tools=[TOOL], max_tokens=MAX_TOKENS
    )
    return f"{reply.usage.prompt_tokens} prompt tokens with the tool's result" if reply.usage else "answered"


def reasoning_apart(client: openai.OpenAI, endpoint: Endpoint) -> str:
    if not endpoint.reasoning:
        return "skipped: the recipe sets no reasoning parser"
    reply = client.chat.completions.create(model=endpoint.model, messages=ASK, max_tokens=256)
    message = reply.choices[0].message.model_dump()
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if not reasoning:
        raise CheckFailed("no reasoning field in the reply: the reasoning parser did not separate it")
    if reasoning in (message.get("content") or ""):
        raise CheckFailed("the reasoning is repeated in the answer")
    return f"{len(reasoning)} characters of reasoning, apart from the answer"


SCREENSHOT_SIZE = (1280, 800)  # pixels: a laptop's window, what an agent's browser tool captures
LOOK = "What does this screenshot show?"


@cache
def screenshot_url() -> str:
    """A screenshot-sized PNG of code lines, as a data URL (agents send images inline)."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", SCREENSHOT_SIZE, "white")
    draw = ImageDraw.Draw(image)
    for line, y in enumerate(range(16, SCREENSHOT_SIZE[1] - 16, 20)):
        draw.text(
            (16, y), f"{line + 1:3d}  def deploy(host: str) -> None:  return playbook.run('deploy', host)", "black"
        )
    png = io.BytesIO()
    image.save(png, "PNG")
    return f"data:image/png;base64,{base64.b64encode(png.getvalue()).decode()}"


def with_image(url: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "text", "text": LOOK}, {"type": "image_url", "image_url": {"url": url}}]}
    ]


def screenshot(client: openai.OpenAI, endpoint: Endpoint) -> str:
    """Streamed, as agents ask: the answer must finish, and the image must count in the prompt's tokens."""
    text_only = _prompt_tokens(client, endpoint, [{"role": "user", "content": LOOK}])
    chunks, finish, _, usage = _stream(client, endpoint, messages=with_image(screenshot_url()))
    if finish is None or usage is None:
        raise CheckFailed(f"the stream ended after {chunks} chunks without a finish reason or usage")
    if usage.prompt_tokens <= text_only:
        raise CheckFailed(f"the prompt counts {usage.prompt_tokens} tokens with the image, {text_only} without it")
    width, height = SCREENSHOT_SIZE
    return f"{width}x{height} PNG: {usage.prompt_tokens - text_only} image tokens, {chunks} chunks, finish {finish}"


BROKEN_PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n not an image").decode()


def _refused(client: openai.OpenAI, endpoint: Endpoint, url: str) -> str:
    """The engine's 400 for a chat with this image; a reply instead fails the check."""
    try:
        client.chat.completions.create(model=endpoint.model, messages=with_image(url), max_tokens=1)
    except _openai().BadRequestError as error:
        return f"400: {_error_message(error)[:90]}"
    raise CheckFailed("served instead of refused with a 400")


def broken_image(client: openai.OpenAI, endpoint: Endpoint) -> str:
    return _refused(client, endpoint, BROKEN_PNG)


def image_refused(client: openai.OpenAI, endpoint: Endpoint) -> str:
    return _refused(client, endpoint, screenshot_url())


def _context_length(client: openai.OpenAI, endpoint: Endpoint) -> int:
    """The model's context length, as vLLM lists it with the model (max_model_len)."""
    (model,) = [model for model in client.models.list().data if model.id == endpoint.model]
    return int(model.model_extra["max_model_len"])


def _prompt_tokens(client: openai.OpenAI, endpoint: Endpoint, messages: list[dict[str, Any]]) -> int:
    """The chat prompt's token count, as the engine reports it for a one-token answer.

    Counted by the chat route itself because that is the route clients reach through the router, with
    their key; the router forwards /tokenize without it.
    """
    reply = client.chat.completions.create(model=endpoint.model, messages=messages, max_tokens=1)
    if reply.usage is None:
        raise CheckFailed("the engine reports no token usage: cannot size a prompt against the context")
    return reply.usage.prompt_tokens


def long_prompt(client: openai.OpenAI, endpoint: Endpoint, target: int) -> list[dict[str, Any]]:
    """A chat whose prompt is `target` tokens or just under, padded with a filler that tokenizes evenly."""
    base = _prompt_tokens(client, endpoint, [{"role": "user", "content": ""}])
    unit = _prompt_tokens(client, endpoint, [{"role": "user", "content": FILLER * 64}])
    per_filler = max(1, (unit - base) // 64)
    return [{"role": "user", "content": FILLER * max(0, (target - base) // per_filler)}]


def near_context_limit(client: openai.OpenAI, endpoint: Endpoint) -> str:
    limit = _context_length(client, endpoint)
    messages = long_prompt(client, endpoint, limit - CONTEXT_MARGIN)
    reply = client.chat.completions.create(model=endpoint.model, messages=messages, max_tokens=4)
    count = reply.usage.prompt_tokens if reply.usage else 0
    return f"{count} of {limit} tokens accepted"


def over_context_limit(client: openai.OpenAI, endpoint: Endpoint) -> str:
    limit = _context_length(client, endpoint)
    messages = long_prompt(client, endpoint, limit + 64)
    try:
        client.chat.completions.create(model=endpoint.model, messages=messages, max_tokens=4)
    except _openai().BadRequestError as error:
        message = _error_message(error)
        if "context" not in message.lower() and "too long" not in message.lower():
            raise CheckFailed(f"refused, but not for its length: {message}") from error
        return f"400: {message[:90]}"
    raise CheckFailed(f"a prompt over the {limit}-token context was served instead of refused")


def failed(checks: list[Check]) -> list[Check]:
    return [check for check in checks if check.outcome == "fail"]
