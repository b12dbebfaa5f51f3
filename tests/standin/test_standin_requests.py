"""The stand-in VLM answers plain OpenAI-style requests of many shapes from what the images show.

None of these requests looks like an agent's: other words, other layouts, other schemas. Each
answer is checked against what the pictures (drawn here) actually show.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from PIL import Image, ImageDraw

from videoatlas.environment.render import load_font
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas_standin.version import STANDIN_MODEL

pytestmark = pytest.mark.e2e

Box = tuple[int, int, str, int]
"""x, y, text, pixel size."""


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield server.base_url


def picture(texts: list[Box], size: tuple[int, int] = (640, 320), bg: tuple[int, int, int] = (20, 40, 120)) -> str:
    """A JPEG data URL of white text on a flat background."""
    img = Image.new("RGB", size, bg)
    draw = ImageDraw.Draw(img)
    for x, y, text, px in texts:
        draw.text((x, y), text, fill=(255, 255, 255), font=load_font(px))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=92)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def ask(url: str, text: str, images: list[str] = (), schema: dict[str, Any] | None = None) -> Any:  # type: ignore[assignment]
    content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": u}} for u in images]
    content.append({"type": "text", "text": text})
    body: dict[str, Any] = {"model": STANDIN_MODEL, "messages": [{"role": "user", "content": content}]}
    if schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
    reply = httpx.post(f"{url}/chat/completions", json=body, timeout=120)
    assert reply.status_code == 200, reply.text
    message = reply.json()["choices"][0]["message"]["content"]
    return json.loads(message) if schema is not None else message


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


TEXT = {"type": "string"}


def test_one_image_and_a_flat_enum(url: str) -> None:
    options = ["WALRUS 1234", "WALRUS 4417", "PENGUIN 4417"]
    image = picture([(60, 110, "WALRUS 4417", 80)])
    reply = ask(
        url, f"Which label is shown? Options: {', '.join(options)}", [image], obj(answer={"enum": options}, reason=TEXT)
    )
    assert reply["answer"] == "WALRUS 4417"
    assert "WALRUS 4417" in reply["reason"]


def test_a_text_only_request_answers_from_a_line_of_its_text(url: str) -> None:
    text = "The operator wrote down the door code 4471 at noon.\nQuestion: Which door code was written down?"
    text += "\nA. 1744\nB. 4471"
    reply = ask(url, text, [], obj(answer={"type": "integer", "minimum": 0, "maximum": 1}, explanation=TEXT))
    assert reply["answer"] == 1
    assert reply["explanation"] == "The operator wrote down the door code 4471 at noon."  # the line it read


def test_nested_objects(url: str) -> None:
    image = picture([(100, 120, "OTTER 31", 72)])
    schema = obj(
        result=obj(label={"enum": ["OTTER 13", "OTTER 31"]}, confidence={"type": "number", "minimum": 0, "maximum": 1}),
        seen=obj(text=TEXT),
    )
    reply = ask(url, "What does the sign read: OTTER 13 or OTTER 31?\nA. OTTER 13\nB. OTTER 31", [image], schema)
    assert reply["result"]["label"] == "OTTER 31" and reply["result"]["confidence"] == 0  # nothing labels it
    assert "OTTER 31" in reply["seen"]["text"]


def test_a_lettered_choice_as_an_integer_index(url: str) -> None:
    image = picture([(60, 120, "GATE B12", 72)])
    text = "Which gate is on the board?\n(A) GATE A7\n(B) GATE C3\n(C) GATE B12"
    assert ask(url, text, [image], obj(choice={"type": "integer", "minimum": 0, "maximum": 2})) == {"choice": 2}


def test_text_on_a_dark_picture_is_read(url: str) -> None:
    image = picture([(60, 110, "WALRUS 4417", 80)], bg=(12, 12, 12))
    options = ["WALRUS 1234", "WALRUS 4417"]
    reply = ask(url, f"Which label is shown? Options: {', '.join(options)}", [image], obj(answer={"enum": options}))
    assert reply == {"answer": "WALRUS 4417"}


def test_answers_that_look_like_actions_are_answers(url: str) -> None:
    image = picture([(200, 110, "ENTER", 80)])
    schema = obj(answer={"enum": ["STOP", "EXIT", "ENTER"]})
    assert ask(url, "Which word is on the door sign? Options: STOP, EXIT, ENTER", [image], schema) == {
        "answer": "ENTER"
    }


def test_array_bounds_are_kept(url: str) -> None:
    image = picture([(40, 120, "HELLO", 64)])
    schema = obj(
        words={"type": "array", "items": {"type": "string", "maxLength": 3}, "minItems": 2},
        ratio={"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    )
    reply = ask(url, "Read the picture.", [image], schema)
    assert len(reply["words"]) >= 2
    assert all(len(w) <= 3 for w in reply["words"]) and 0 < reply["ratio"] < 1


@pytest.mark.parametrize(
    ("backend", "message"),
    [
        # vLLM 0.33's words, status and error body for each backend (auto falls back to guidance,
        # whose llguidance refuses the keyword).
        ("auto", 'Grammar error: Unimplemented keys: ["uniqueItems"]'),
        ("guidance", 'Grammar error: Unimplemented keys: ["uniqueItems"]'),
        ("xgrammar", "The provided JSON schema contains features not supported by xgrammar."),
    ],
)
def test_a_schema_with_unique_items_is_refused_as_vllm_refuses_it(backend: str, message: str) -> None:
    schema = obj(words={"type": "array", "items": {"type": "string"}, "uniqueItems": True})
    body = {
        "model": STANDIN_MODEL,
        "messages": [{"role": "user", "content": "List two words."}],
        "max_completion_tokens": 64,
        "response_format": {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}},
    }
    config = StandinConfig(structured_outputs_backend=backend)  # type: ignore[arg-type]
    with RunningServer(StandinServer(config, reader=Reader())) as server:
        reply = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=60)
        stats = httpx.get(f"{server.base_url.removesuffix('/v1')}/stats", timeout=10).json()
    assert reply.status_code == 400
    assert reply.json() == {"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}}
    assert stats["completed"] == 0
