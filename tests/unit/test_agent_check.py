"""What agent-check sends that needs no engine: the screenshot and the broken image."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image, UnidentifiedImageError

from station.deploy import agent_check


def decoded(url: str) -> bytes:
    header, _, data = url.partition(",")
    assert header == "data:image/png;base64"
    return base64.b64decode(data)


def test_the_screenshot_is_a_screenshot_sized_png() -> None:
    image = Image.open(io.BytesIO(decoded(agent_check.screenshot_url())))
    assert (image.format, image.size) == ("PNG", agent_check.SCREENSHOT_SIZE)
    assert len(image.getcolors(maxcolors=1 << 16) or []) > 2  # text on the page, not a blank


def test_the_broken_image_starts_as_a_png_and_does_not_decode() -> None:
    data = decoded(agent_check.BROKEN_PNG)
    assert data.startswith(b"\x89PNG")
    with pytest.raises(UnidentifiedImageError):
        Image.open(io.BytesIO(data))


def test_the_image_message_carries_the_text_and_the_image_as_agents_send_them() -> None:
    (message,) = agent_check.with_image("data:image/png;base64,AA==")
    assert message["role"] == "user"
    assert [part["type"] for part in message["content"]] == ["text", "image_url"]
