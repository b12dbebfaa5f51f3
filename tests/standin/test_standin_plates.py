"""What stand-in v21 did not do (v22 does), as a careful reader would, over real HTTP.

* A frame's id and time burned in on a black plate over the picture's own heading are read apart from
  it: v21 read the label and the heading as one line, and the frame had neither id nor time.
* Frames sent one picture each are one sequence in time: "right after X" walks from one to the next,
  and a thing shown in consecutive ones is one appearance, not one per picture.
* A search task the stand-in writes as a planner starts with the question it serves, so a tool that is
  sent only the task still knows what the question places in time.

Words, headings and layouts here are the test's own; the labels are burned in by the atlas's own renderer.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator

import numpy as np
import openai
import pytest
from PIL import Image, ImageDraw

from picture_helpers import ask, user
from videoatlas.environment.render import load_font, render_zoom
from videoatlas.environment.timefmt import format_ts
from videoatlas.environment.video import DecodedFrame
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

QUESTION = "Which ferry is shown right after the FOG NOTICE?"
CHOICES = ["MERIDIAN", "CORMORANT", "SANDPIPER"]
LISTED = "Choices:\nA. MERIDIAN\nB. CORMORANT\nC. SANDPIPER"
START_S = 131.0


def frame(i: int, sign: str, heading: bool = True) -> Image.Image:
    """Frame ``i`` (one second apart): a sign on a dark quay, a heading band on top, its id and time on a plate."""
    img = Image.new("RGB", (640, 360), (24, 40, 88))
    draw = ImageDraw.Draw(img)
    if heading:
        draw.rectangle((0, 0, 640, 44), fill=(34, 34, 40))
        draw.text((18, 10), "HARBOUR WATCH", fill=(240, 240, 240), font=load_font(26))
    draw.text((200, 170), sign, fill=(250, 250, 250), font=load_font(40))
    t = START_S + i
    return render_zoom(DecodedFrame(t, np.asarray(img), "exact"), f"{i}  {format_ts(t, 2)}")


def url(img: Image.Image) -> str:
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=90)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


@pytest.mark.unit
def test_a_label_on_a_plate_over_a_heading_is_read_apart_from_it() -> None:
    sight = Reader().see(np.asarray(frame(3, "CORMORANT")))
    assert len(sight.tiles) == 1
    tile = sight.tiles[0]
    assert (tile.cell, tile.time) == (3, START_S + 3)
    assert "CORMORANT" in tile.text
    assert "WATCH" in tile.text  # the heading is still read, beside the label


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


SIGNS = ["MERIDIAN", "MERIDIAN", "FOG NOTICE", "FOG NOTICE", "CORMORANT", "SANDPIPER", "SANDPIPER", "SANDPIPER"]
"""MERIDIAN before the notice and SANDPIPER after CORMORANT are each seen more often than the answer."""


def answer(client: openai.OpenAI, text: str, signs: list[str], heading: bool = True) -> str:
    """The ferry the stand-in picks (an enum of the choices) for ``text`` beside one picture per frame."""
    images = [url(frame(i, sign, heading)) for i, sign in enumerate(signs)]
    schema = {"type": "object", "properties": {"ferry": {"enum": CHOICES}}, "required": ["ferry"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "pick", "schema": schema}}
    reply = ask(client, messages=[user(text, *images)], response_format=fmt)
    picked: str = json.loads(reply.choices[0].message.content or "")["ferry"]
    return picked


@pytest.mark.e2e
@pytest.mark.parametrize("heading", [True, False])
def test_right_after_walks_from_one_picture_of_a_frame_to_the_next(client: openai.OpenAI, heading: bool) -> None:
    text = f"These frames are one second apart, each labelled with its id and time.\nQuestion: {QUESTION}\n{LISTED}"
    assert answer(client, text, SIGNS, heading) == "CORMORANT"


@pytest.mark.e2e
def test_a_task_written_as_a_planner_tells_a_tool_what_is_placed_in_time(client: openai.OpenAI) -> None:
    """The planner's task, sent alone with the frames, still picks the ferry right after the notice."""
    plan = {
        "type": "object",
        "properties": {"thought": {"type": "string"}, "query": {"type": "string", "maxLength": 400}},
        "required": ["thought", "query"],
    }
    asked = f"Question: {QUESTION}\n{LISTED}\nWrite what the looking tool should look for."
    reply = ask(
        client,
        messages=[user(asked)],
        response_format={"type": "json_schema", "json_schema": {"name": "plan", "schema": plan}},
    )
    query: str = json.loads(reply.choices[0].message.content or "")["query"]
    assert query.startswith(QUESTION)
    tool = f"These frames are one second apart, each labelled with its id and time.\nWhat to look for: {query}"
    assert answer(client, tool, SIGNS[2:]) == "CORMORANT"


@pytest.mark.e2e
def test_a_sign_in_consecutive_pictures_of_one_frame_each_is_one_appearance(client: openai.OpenAI) -> None:
    """LANTERN in frames 1-3 and again in frame 6: two appearances, not one per picture."""
    signs = ["QUAY", "LANTERN", "LANTERN", "LANTERN", "QUAY", "QUAY", "LANTERN", "QUAY"]
    images = [url(frame(i, sign)) for i, sign in enumerate(signs)]
    text = (
        "These frames are one second apart, each labelled with its id and time.\n"
        "Question: How many times does the LANTERN sign appear?\nChoices:\nA. 1\nB. 2\nC. 4\nD. 5"
    )
    schema = {"type": "object", "properties": {"times": {"enum": ["1", "2", "4", "5"]}}, "required": ["times"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "count", "schema": schema}}
    reply = ask(client, messages=[user(text, *images)], response_format=fmt)
    assert json.loads(reply.choices[0].message.content or "")["times"] == "2"
