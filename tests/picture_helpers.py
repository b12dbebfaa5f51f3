"""Pictures of labelled text, the requests that send them to a stand-in and the checks of its tool calls."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import jsonschema
import openai
from openai.types.chat import ChatCompletion
from PIL import Image, ImageDraw

from videoatlas.environment.render import load_font
from videoatlas_standin.version import STANDIN_MODEL

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


def said(client: openai.OpenAI, text: str, *images: str) -> str:
    """The stand-in's plain text reply to one user message (the pictures, then the text)."""
    return ask(client, messages=[user(text, *images)]).choices[0].message.content or ""


def user(text: str, *images: str) -> dict[str, Any]:
    """A user message: the pictures first, then the text."""
    parts: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": url}} for url in images]
    return {"role": "user", "content": [*parts, {"type": "text", "text": text}]}


_SECONDS = {"type": "number", "minimum": 0, "maximum": 600}
SURVEY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "act": {"const": "survey"},
        "spans": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"from_s": _SECONDS, "to_s": _SECONDS},
                "required": ["from_s", "to_s"],
            },
            "maxItems": 3,
        },
        "n_frames": {"type": "integer", "enum": [24, 48]},
    },
    "required": ["act", "spans", "n_frames"],
}
"""A step's variant that surveys up to 3 stretches of a 600 s video through 24 or 48 frames."""
FINISH: dict[str, Any] = {"type": "object", "properties": {"act": {"const": "finish"}}, "required": ["act"]}
"""A step's variant that ends the search."""


def step_format(*variants: dict[str, Any]) -> dict[str, Any]:
    """A ``response_format`` asking for ``why``, then ``step``: one of ``variants`` (each tagged by its ``act``)."""
    schema = {"type": "object", "properties": {"why": {"type": "string"}, "step": {"anyOf": list(variants)}}}
    return {"type": "json_schema", "json_schema": {"name": "step", "schema": schema | {"required": ["why", "step"]}}}


def function(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI function tool whose every property is required."""
    params = {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": params}}


def calls_of(reply: ChatCompletion, tools: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The reply's calls, each checked against the schema of the function it names."""
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    out = []
    for call in reply.choices[0].message.tool_calls or []:
        assert call.type == "function" and call.id.startswith("chatcmpl-tool-")
        args = json.loads(call.function.arguments)
        jsonschema.validate(args, schemas[call.function.name])
        out.append((call.function.name, args))
    return out
