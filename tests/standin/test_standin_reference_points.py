"""A field for the point a time relation is measured from gets the phrase the question's relation governs.

A plain ``openai`` client asks for a search plan whose schema (field names and wording of our own, not
any agent's) has a relation, a reference point and a second one. "Right after the DELAYED sign?" gives
"the DELAYED sign"; "between the red banner and the clock" gives both; a question that states no
relation leaves them empty, and a field that asks for something seen never gets the question's words.
A relation said in other words ("directly following", "right before") takes the one member that says
the same side of its anchor. A list of frame ids asked for the reference point holds the frames that
show it and no other: a choice seen without it is not the reference point. With the reference point in
view and no frame shown in the stretch right before it, a closer look goes there before any answer.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from action_video import Sign, write_signs_video
from picture_helpers import ask, user
from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.frames import FrameSource
from videoatlas_standin.perception import Reader
from videoatlas_standin.relations import member_saying, reference_field, reference_points
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


PLAN: dict[str, Any] = {
    "type": "object",
    "properties": {
        "goal": {"type": "string", "maxLength": 300},
        "timing": {"enum": ["none", "right after", "just before", "between", "how long after"]},
        "landmark": {"type": "string", "maxLength": 120},
        "second_landmark": {"type": "string", "maxLength": 120},
        "plate_seen": {"type": "string"},
    },
    "required": ["goal", "timing", "landmark", "second_landmark", "plate_seen"],
    "additionalProperties": False,
}


def plan(client: openai.OpenAI, question: str, schema: dict[str, Any] = PLAN) -> dict[str, Any]:
    text = f"Plan how to search a long video for the answer, before looking at it.\nQ: {question}"
    fmt = {"type": "json_schema", "json_schema": {"name": "plan", "schema": schema}}
    reply = ask(client, messages=[{"role": "user", "content": text}], response_format=fmt)
    value: dict[str, Any] = json.loads(reply.choices[0].message.content or "")
    return value


@pytest.mark.parametrize(
    ("question", "timing", "first", "second"),
    [
        ("Which word is shown right after the DELAYED sign?", "right after", "the DELAYED sign", ""),
        ("What colour is the card shown just before the goal replay?", "just before", "the goal replay", ""),
        ("Which logo appears between the red banner and the clock?", "between", "the red banner", "the clock"),
        ("How long after the first whistle does the crowd stand up?", "how long after", "the first whistle", ""),
        ("Following the weather map, which city is named on screen?", "right after", "the weather map", ""),
        ("Which plate number is visible on the car?", "none", "", ""),
        # The relation in other words: the one member that says the same side of the anchor.
        ("Directly following the weather map, which city is named?", "right after", "the weather map", ""),
        ("Right before the goal replay, what colour is the card?", "just before", "the goal replay", ""),
        ("Which word appears after the fanfare?", "right after", "the fanfare", ""),
        ("How much time after the first whistle does the crowd stand up?", "how long after", "the first whistle", ""),
        ("How many times is the crowd shown after the whistle?", "none", "the whistle", ""),  # a count, not a moment
    ],
)
def test_the_relation_and_the_phrase_it_governs(
    client: openai.OpenAI, question: str, timing: str, first: str, second: str
) -> None:
    got = plan(client, question)
    assert (got["timing"], got["landmark"], got["second_landmark"]) == (timing, first, second)
    assert got["plate_seen"] == ""  # a field for something seen never takes the question's words


CARDS = {"KITE": (20, 90, 150), "GONG": (150, 40, 20), "BALLOON": (20, 120, 60)}
"""Each toy's card colour."""


async def toys_page(
    folder: Path, toys: dict[str, tuple[float, float]], duration: float, times: list[float], cols: int, rows: int
) -> str:
    """A data URL of one page of the frames at ``times`` from a video that shows each toy's card over its span."""
    signs = tuple(Sign(a, b, name, 52, 320, 180, card=CARDS[name]) for name, (a, b) in toys.items())
    source = FrameSource(write_signs_video(folder / "toys.mp4", signs, duration))
    try:
        page = (await VideoAtlas(source, k=4, cell_px=64).amosaic(times, cols, rows, 256))[0]
    finally:
        source.close()
    return "data:image/jpeg;base64," + base64.b64encode(page.jpeg).decode()


LOOKED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "notes": {"type": "string", "maxLength": 300},
        "useful_frames": {"type": "array", "items": {"enum": [0, 1, 2, 3], "type": "integer"}, "maxItems": 4},
        "landmark_frames": {"type": "array", "items": {"enum": [0, 1, 2, 3], "type": "integer"}, "maxItems": 2},
    },
    "required": ["notes", "useful_frames", "landmark_frames"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("times", "useful", "landmark"),
    [([4.0, 8.0, 12.0, 16.0], [2], []), ([17.0, 21.0, 25.0, 29.0], [2, 1], [1])],
)
async def test_the_frames_of_the_reference_point_are_those_that_show_it(
    client: openai.OpenAI, tmp_path: Path, times: list[float], useful: list[int], landmark: list[int]
) -> None:
    """A KITE (a choice) at 10-14 s, the GONG card at 20-23 s, a BALLOON (the answer) at 24-28 s."""
    toys = {"KITE": (10.0, 14.0), "GONG": (20.0, 23.0), "BALLOON": (24.0, 28.0)}
    url = await toys_page(tmp_path, toys, 40.0, times, 2, 2)
    text = "Frames 0-3 of a toy show, in time order.\nQ: Straight after the GONG card, which toy is held up?\n"
    text += "A. KITE\nB. BALLOON\nNote what the frames show and which help; also the landmark's frames."
    fmt = {"type": "json_schema", "json_schema": {"name": "looked", "schema": LOOKED}}
    reply = ask(client, messages=[user(text, url)], response_format=fmt)
    got = json.loads(reply.choices[0].message.content or "")
    assert got["useful_frames"] == useful  # the KITE at 12 s is seen, and bears on the question
    assert got["landmark_frames"] == landmark  # ... but it is not the landmark: only the GONG at 21 s is


def test_a_description_can_say_the_field_holds_the_reference_point(client: openai.OpenAI) -> None:
    schema = {
        "type": "object",
        "properties": {"pivot_text": {"type": "string", "description": "the event the answer is relative to"}},
        "required": ["pivot_text"],
    }
    assert plan(client, "Which sign is shown since the alarm went off?", schema) == {"pivot_text": "the alarm went off"}


@pytest.mark.unit
def test_which_fields_ask_for_a_reference_point() -> None:
    assert reference_field("anchor") == 0
    assert reference_field("other_anchor") == 1
    assert reference_field("reference_event") == 0
    assert reference_field("when_seen", "the moment the answer is measured from") == 0
    assert reference_field("room_number") is None
    assert reference_field("search_task", "what to look for on screen") is None
    assert reference_points("What happens after lunch, and who speaks?") == ["lunch"]
    assert reference_points("Which plate is shown?") == []

    relations = ["none", "right after", "just before", "between", "first", "last", "how long after"]
    assert member_saying(relations, "after", "Straight after the sign, which card is up?") == 1
    assert member_saying(relations, "before", "Right before the sign, which card is up?") == 2
    assert member_saying(relations, "after", "How long after the sign does the card come up?") == 6
    assert member_saying(["none", "soon after", "well after"], "after", "Past the sign?") is None  # two say it
    assert member_saying(["none", "first", "last"], "after", "After the sign, which card?") is None


def _stretch(tag: str, **fields: Any) -> dict[str, Any]:
    props = {"do": {"const": tag}, **fields}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


async def test_the_moment_right_before_the_reference_point_is_looked_at_before_answering(
    client: openai.OpenAI, tmp_path: Path
) -> None:
    """Frames 40 s apart show a KITE (47 s) and the GONG card (207 s); the BALLOON held up just before the GONG
    (200-204 s) falls between two of them. The reply is a closer look at the 30 s before the GONG, with the
    question put to it, not an answer resting on nothing."""
    toys = {"KITE": (40.0, 50.0), "BALLOON": (200.0, 204.0), "GONG": (206.0, 209.0)}
    url = await toys_page(tmp_path, toys, 300.0, [7.0 + 40 * i for i in range(8)], 4, 2)
    question = "Just before the GONG card, which toy is held up?"
    text = f"Q: {question}\nA. KITE\nB. BALLOON\nFrames 0-7 of the 300 s show, in time order.\nNext steps:\n"
    text += "- survey: sweep some stretches at a glance\n- inspect: look at one stretch in detail\n"
    text += "- reply: finish with the final answer"
    when = {"type": "number", "minimum": 0, "maximum": 300}
    spans = {"type": "array", "items": {"type": "array", "items": when, "minItems": 2, "maxItems": 2}}
    variants = [
        _stretch("survey", stretches=spans),
        _stretch("inspect", start=when, end=when, question={"type": "string", "maxLength": 300}),
        _stretch("reply", choice={"enum": ["A", "B"]}),
    ]
    schema = {"type": "object", "properties": {"next": {"anyOf": variants}}, "required": ["next"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "next", "schema": schema}}
    got = json.loads(ask(client, messages=[user(text, url)], response_format=fmt).choices[0].message.content or "")[
        "next"
    ]
    assert (got["do"], got["start"], got["end"]) == (
        "inspect",
        pytest.approx(177.0, abs=0.5),
        pytest.approx(207.0, abs=0.5),
    )
    assert got["question"].startswith(question)
    # Once that look is reported, it is not taken again: what it reported stands.
    text += "\nDone so far: inspect on 02:57.0-03:27.0: the BALLOON is held up at 03:21"
    again = json.loads(ask(client, messages=[user(text, url)], response_format=fmt).choices[0].message.content or "")
    assert again["next"]["do"] == "reply"
