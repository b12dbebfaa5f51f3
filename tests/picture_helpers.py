"""Pictures of labelled text and the calls that send them to a stand-in, for the stand-in's reading tests."""

from __future__ import annotations

import base64
import io
from typing import Any

import openai
from openai.types.chat import ChatCompletion
from PIL import Image, ImageDraw

from videoatlas.environment.render import load_font
from videoatlas.standin.version import STANDIN_MODEL

Box = tuple[int, int, str, int]
"""x, y, text, pixel size."""


def picture(texts: list[Box], size: tuple[int, int] = (640, 360)) -> str:
    """A JPEG data URL of dark text on a light card."""
    img = Image.new("RGB", size, (235, 235, 225))
    draw = ImageDraw.Draw(img)
    for x, y, text, px in texts:
        draw.text((x, y), text, fill=(15, 15, 15), font=load_font(px))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=92)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def ask(client: openai.OpenAI, **request: Any) -> ChatCompletion:
    """One chat completion from the stand-in, the request as given."""
    reply: ChatCompletion = client.chat.completions.create(model=STANDIN_MODEL, **request)
    return reply


def user(text: str, *images: str) -> dict[str, Any]:
    """A user message: the pictures first, then the text."""
    parts: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": url}} for url in images]
    return {"role": "user", "content": [*parts, {"type": "text", "text": text}]}
