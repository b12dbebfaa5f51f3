"""A field for the point a time relation is measured from gets the phrase the question's relation governs.

A plain ``openai`` client asks for a search plan whose schema (field names and wording of our own, not
any agent's) has a relation, a reference point and a second one. "Right after the DELAYED sign?" gives
"the DELAYED sign"; "between the red banner and the clock" gives both; a question that states no
relation leaves them empty, and a field that asks for something seen never gets the question's words.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from picture_helpers import ask
from videoatlas.standin.perception import Reader
from videoatlas.standin.relations import reference_field, reference_points
from videoatlas.standin.server import RunningServer, StandinConfig, StandinServer

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
    ("question", "first", "second"),
    [
        ("Which word is shown right after the DELAYED sign?", "the DELAYED sign", ""),
        ("What colour is the card shown just before the goal replay?", "the goal replay", ""),
        ("Which logo appears between the red banner and the clock?", "the red banner", "the clock"),
        ("How long after the first whistle does the crowd stand up?", "the first whistle", ""),
        ("Following the weather map, which city is named on screen?", "the weather map", ""),
        ("Which plate number is visible on the car?", "", ""),
    ],
)
def test_the_reference_point_is_the_phrase_the_relation_governs(
    client: openai.OpenAI, question: str, first: str, second: str
) -> None:
    got = plan(client, question)
    assert (got["landmark"], got["second_landmark"]) == (first, second)
    assert got["plate_seen"] == ""  # a field for something seen never takes the question's words


def test_the_relation_and_its_anchor_together(client: openai.OpenAI) -> None:
    got = plan(client, "What is written right after the DELAYED sign?")
    assert got["timing"] == "right after" and got["landmark"] == "the DELAYED sign"


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
