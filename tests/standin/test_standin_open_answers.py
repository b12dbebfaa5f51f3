"""Open questions get the value they ask for, and an enum takes the member the question states, over real HTTP.

A question without choices is answered the way a model answers it: "how many" with the count of
separate appearances, "what/which" with the words read beside what the question names (not the
question's own words), "when" with the time the thing was seen, and a description only when the
question asks for one. A reply schema's enum that no picture fills takes the member the question
states word for word (the longest), while an action enum keeps its own rules. Pictures drawn here
use words of their own, none from the synthetic videos.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from picture_helpers import ask, picture, said, user
from videoatlas.evals.open_answers import as_number
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = pytest.mark.e2e

STALLS = picture([(40, 30, "KIWI 12", 40), (340, 30, "MANGO 4", 40), (40, 150, "KIWI 30", 40), (40, 270, "KIWI", 40)])
"""A market board: one fruit written on three separate lines (once with its price), another once."""
PARCEL = picture([(40, 40, "PARCEL FOR HENDRIX", 40), (40, 110, "RX-7730", 56), (40, 280, "OPEN DAILY", 30)])
"""A parcel label: a name, the code right under it, a line far away."""
STREET = picture([(60, 120, "ORCHID LANE", 64)])
"""A street sign: a name and the word beside it."""
TIMED_NOTES = """Notes from the footage:
[A] 95.0-97.0 s: a TULIP sticker on the door
[B] 96.0-98.0 s: the same TULIP sticker, closer
[C] 410.0-412.0 s: a TULIP sticker on a crate
"""


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def filled(client: openai.OpenAI, text: str, schema: dict[str, Any], *images: str) -> Any:
    fmt = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
    reply = ask(client, messages=[user(text, *images)], response_format=fmt)
    return json.loads(reply.choices[0].message.content or "")


def test_a_count_question_is_answered_with_the_count(client: openai.OpenAI) -> None:
    assert said(client, "How many times is KIWI written on this board? Answer with a number.", STALLS) == "3"
    assert said(client, "How many times is MANGO written on this board?", STALLS) == "1"


def test_a_count_over_time_counts_separate_appearances_not_notes(client: openai.OpenAI) -> None:
    """Two notes of one moment (overlapping times) are one appearance; a later one is another."""
    reply = said(client, TIMED_NOTES + "\nHow many separate times does the TULIP sticker appear?")
    assert reply == "2" and as_number(reply) == 2.0


def test_an_open_count_is_settled_only_once_the_whole_video_was_searched(client: openai.OpenAI) -> None:
    """As with choices (since v18): any part not searched may hold one more appearance."""
    schema = {"type": "object", "properties": {"sufficient": {"type": "boolean"}}, "required": ["sufficient"]}
    asked = "Question: How many separate times does the TULIP sticker appear?\n" + TIMED_NOTES
    assert filled(client, asked + "40% of the video searched so far.", schema) == {"sufficient": False}
    assert filled(client, asked + "100% of the video searched so far.", schema) == {"sufficient": True}
    assert (
        said(
            client,
            TIMED_NOTES + "100% of the video searched so far.\nHow many separate times does the TULIP sticker appear?",
        )
        == "2"
    )


def test_a_count_is_a_number_not_the_words_printed_under_what_it_counts(client: openai.OpenAI) -> None:
    """A line under the counted badge reads as its value (a label and value pair), but a count wants a number."""
    badge = picture([(40, 40, "HALL KESTREL", 40), (40, 110, "Welcome to the upper deck.", 30)])
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}, "reasoning": {"type": "string"}},
        "required": ["answer", "reasoning"],
        "additionalProperties": False,
    }
    asked = "In total, how often does the KESTREL badge come up on screen? Give the number."
    assert filled(client, asked, schema, badge)["answer"] == "1"


def test_a_what_question_gets_the_words_read_beside_what_it_names(client: openai.OpenAI) -> None:
    assert said(client, "What code is printed on the parcel for HENDRIX?", PARCEL) == "RX-7730"
    assert said(client, "Which word is written beside ORCHID on the sign?", STREET) == "LANE"


def test_an_open_answer_field_holds_the_value_typed_by_its_schema(client: openai.OpenAI) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}, "reasoning": {"type": "string"}},
        "required": ["answer", "reasoning"],
        "additionalProperties": False,
    }
    out = filled(client, "What code is printed on the parcel for HENDRIX?", schema, PARCEL)
    assert out["answer"] == "RX-7730"
    counted = {**schema, "properties": {"count": {"type": "integer"}}, "required": ["count"]}
    assert filled(client, "How many times is KIWI written on this board?", counted, STALLS) == {"count": 3}


def test_options_headed_as_none_make_a_numbered_list_of_steps_no_choices(client: openai.OpenAI) -> None:
    """A heading that lists no option under it says the question is open: numbered steps below are not options."""
    text = (
        "Question: How many times is KIWI written on this board?\nOptions:\n(there are none)\n\n"
        "1. Read the board line by line.\n2. Say whether what you read settles the question.\n"
    )
    schema = {
        "type": "object",
        "properties": {"sufficient": {"type": "boolean"}, "count": {"type": "integer"}},
        "required": ["sufficient", "count"],
        "additionalProperties": False,
    }
    assert filled(client, text, schema, STALLS) == {"sufficient": True, "count": 3}


def test_a_when_question_gets_the_time_it_was_seen(client: openai.OpenAI) -> None:
    reply = said(client, TIMED_NOTES + "\nWhen is the TULIP sticker first seen?")
    assert reply == "1:35" and as_number(reply) == 95.0


def test_a_description_only_when_the_question_asks_for_one(client: openai.OpenAI) -> None:
    reply = said(client, "Can you describe what the parcel for HENDRIX shows?", PARCEL)
    assert reply.startswith("Seen: ") and "RX-7730" in reply


RELATION = {
    "type": "object",
    "properties": {
        "plan": {"type": "string"},
        "relation": {"type": "string", "enum": ["none", "after", "right after", "just before", "between"]},
    },
    "required": ["plan", "relation"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("question", "member"),
    [
        ("Which kite is flown right after the thunder clap?", "right after"),
        ("Which kite is flown just before the thunder clap?", "just before"),
        ("Which kite is flown between the rain and the thunder?", "between"),
        ("Which kite is flown after the thunder clap?", "after"),
        ("Which kite is the largest?", "none"),
    ],
)
def test_an_enum_takes_the_member_the_question_states(client: openai.OpenAI, question: str, member: str) -> None:
    """The longest member stated wins ("right after" over "after"); none stated: the first member, as before."""
    assert filled(client, question, RELATION)["relation"] == member


def test_json_asked_for_in_words_takes_the_alternative_the_question_states(client: openai.OpenAI) -> None:
    """An example value listing alternatives with ``|`` asks for one of them, as a schema's enum does."""
    example = 'Reply in JSON like {"relation": "none|right after|just before", "note": "..."}.'
    out = json.loads(said(client, f"{example}\nWhich kite is flown just before the thunder clap?"))
    assert out == {"relation": "just before", "note": out["note"]} and isinstance(out["note"], str)


def test_an_action_enum_keeps_its_own_rules(client: openai.OpenAI) -> None:
    """A question that happens to say an action's name does not choose the step: what was seen does."""
    schema = {
        "type": "object",
        "properties": {"action": {"type": "string", "enum": ["zoom", "stop"]}},
        "required": ["action"],
        "additionalProperties": False,
    }
    question = "What code is printed on the parcel for HENDRIX? You may zoom in to read it."
    assert filled(client, question, schema, PARCEL) == {"action": "stop"}  # the code is in view: done, not "zoom"
