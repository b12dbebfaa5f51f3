"""Another stretch of the video before answering without evidence: a function that takes a span, over real HTTP.

A plain ``openai`` client offers a ``look(start, end)`` function and an ``answer`` function. When a
look found nothing that bears on the question and steps remain, the stand-in looks at a stretch no
earlier call covered (read from the calls' arguments and what their results report); once the whole
video was looked at, it answers. The length of the video comes from the request: its text or the
bound the schema puts on the times.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import openai
import pytest

from picture_helpers import ask, calls_of, function
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas_standin.spans import span_keys, stated_length, uncovered

pytestmark = pytest.mark.e2e

SECONDS = {"type": "number", "description": "seconds from the start of the video"}
LOOK = function("look", "Look at the frames of the video between two times.", {"start": SECONDS, "end": SECONDS})
ANSWER = function("answer", "Give the final answer to the question.", {"answer": {"type": "string"}})
QUESTION = "What is the code number painted on the red van?"


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    """A client of a stand-in started as ``--enable-auto-tool-choice --tool-call-parser hermes``."""
    config = StandinConfig(enable_auto_tool_choice=True, tool_call_parser="hermes")
    with RunningServer(StandinServer(config, reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def conversation(system: str, looks: Sequence[tuple[float, float, str]], question: str = QUESTION) -> list[Any]:
    """A conversation where ``look`` was called on each (start, end) and returned the text given."""
    messages: list[Any] = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    for n, (start, end, found) in enumerate(looks):
        call = {
            "id": f"call-{n}",
            "type": "function",
            "function": {"name": "look", "arguments": json.dumps({"start": start, "end": end})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call-{n}", "content": found})
    return messages


NOTHING = "Trees, a bus stop and an empty street."


@pytest.mark.parametrize("choice", ["auto", "required"])
def test_a_look_that_found_nothing_is_followed_by_a_look_elsewhere(client: openai.OpenAI, choice: str) -> None:
    tools = [LOOK, ANSWER]
    messages = conversation("The video is 600 s long. You have 4 calls left.", [(0, 60, NOTHING)])
    [(name, args)] = calls_of(ask(client, messages=messages, tools=tools, tool_choice=choice), tools)
    assert name == "look"
    assert args["end"] > args["start"] >= 60 and args["end"] <= 600  # outside 0-60, inside the video


def test_the_stretches_results_report_count_as_looked_at(client: openai.OpenAI) -> None:
    tools = [LOOK, ANSWER]
    looks = [(0, 60, f"Frames 00:00-02:00: {NOTHING}")]  # the result says it covered two minutes
    messages = conversation(
        "You have 4 calls left.", looks, "In this 10-minute video, " + QUESTION[0].lower() + QUESTION[1:]
    )
    [(name, args)] = calls_of(ask(client, messages=messages, tools=tools, tool_choice="required"), tools)
    assert name == "look" and args["start"] >= 120 and args["end"] <= 600


def test_a_video_looked_at_whole_is_answered(client: openai.OpenAI) -> None:
    tools = [LOOK, ANSWER]
    looks = [(0, 60, NOTHING), (60, 330, NOTHING), (330, 600, NOTHING)]
    messages = conversation("The video is 600 s long. You have 2 calls left.", looks)
    [(name, _)] = calls_of(ask(client, messages=messages, tools=tools, tool_choice="required"), tools)
    assert name == "answer"
    auto = ask(client, messages=messages, tools=tools)
    assert [n for n, _ in calls_of(auto, tools)] in ([], ["answer"])  # text or the answer: no more looking


def test_no_step_left_means_answering(client: openai.OpenAI) -> None:
    tools = [LOOK, ANSWER]
    messages = conversation("The video is 600 s long. This is step 2 of 2.", [(0, 60, NOTHING)])
    [(name, _)] = calls_of(ask(client, messages=messages, tools=tools, tool_choice="required"), tools)
    assert name == "answer"


def test_after_one_sighting_a_count_looks_on_elsewhere(client: openai.OpenAI) -> None:
    """How many times is not settled by the one sighting the first look reported (v23)."""
    tools = [LOOK, ANSWER]
    seen = "At 00:21 the blue kite crosses the screen."
    messages = conversation(
        "The video is 600 s long. You have 20 calls left.", [(0, 60, seen)], "How many times does the blue kite fly by?"
    )
    reply = ask(client, messages=messages, tools=tools, tool_choice="required")
    assert calls_of(reply, tools) == [("look", {"start": 60, "end": 120})]


def test_a_look_that_found_what_was_asked_is_not_followed_elsewhere(client: openai.OpenAI) -> None:
    tools = [LOOK, ANSWER]
    found = "At 00:42 the red van shows the code 7731 on its side."
    messages = conversation("The video is 600 s long. You have 4 calls left.", [(0, 60, found)])
    reply = ask(client, messages=messages, tools=tools, tool_choice="required")
    assert [name for name, _ in calls_of(reply, tools)] == ["answer"]


def test_the_schema_bound_says_how_long_the_video_is(client: openai.OpenAI) -> None:
    bounded = {"type": "integer", "minimum": 0, "maximum": 90}
    tools = [
        function("view_span", "View the clip from one second to another.", {"from_s": bounded, "to_s": bounded}),
        ANSWER,
    ]
    messages = [
        {"role": "system", "content": "3 calls left."},
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "view_span", "arguments": '{"from_s": 0, "to_s": 30}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": NOTHING},
    ]
    [(name, args)] = calls_of(ask(client, messages=messages, tools=tools, tool_choice="required"), tools)
    assert name == "view_span" and args == {"from_s": 30, "to_s": 60}


def test_a_function_that_takes_an_array_of_ranges_gets_the_next_one(client: openai.OpenAI) -> None:
    stretch = {"type": "object", "properties": {"start": SECONDS, "end": SECONDS}, "required": ["start", "end"]}
    survey = function(
        "survey", "Look over some stretches of the video.", {"ranges": {"type": "array", "items": stretch}}
    )
    tools = [survey, ANSWER]
    call = {
        "id": "a",
        "type": "function",
        "function": {"name": "survey", "arguments": '{"ranges": [{"start": 0, "end": 60}]}'},
    }
    messages = [
        {"role": "system", "content": "The video is 600 s long. You have 4 calls left."},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "a", "content": NOTHING},
    ]
    [(name, args)] = calls_of(ask(client, messages=messages, tools=tools, tool_choice="required"), tools)
    assert name == "survey" and args == {"ranges": [{"start": 60, "end": 195}]}  # 540 s left over 4 calls


@pytest.mark.unit
@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("The video is 600 s long.", 600.0),
        ("a 90-second clip", 90.0),
        ("In this 10-minute video, what is shown?", 600.0),
        ("Duration: 1:02:03", 3723.0),
        ("It is 2 hours long.", 7200.0),
        ("At 30 s the sign is red.", None),
        ("Each look shows a 10 s clip of the 600-second video.", 600.0),
    ],
)
def test_the_length_a_text_states(text: str, seconds: float | None) -> None:
    assert stated_length(text) == seconds


@pytest.mark.unit
def test_which_arguments_take_a_span_and_what_is_left() -> None:
    assert span_keys({"properties": {"start": {"type": "number"}, "end": {"type": "number"}}}) == ("start", "end")
    timed = {
        "properties": {
            "a": {"type": "number", "description": "time in seconds"},
            "b": {"type": "integer", "description": "time in seconds"},
        }
    }
    assert span_keys(timed) == ("a", "b")
    assert span_keys({"properties": {"room": {"type": "integer"}, "floor": {"type": "integer"}}}) is None
    assert uncovered([(0, 60)], 600, 60, 60) == (60, 120)
    assert uncovered([(0, 60), (120, 600)], 600, 100, 600) == (60, 120)  # past the end: the gap left earlier
    assert uncovered([(0, 299), (300, 600)], 600, 60, 600) is None  # a second between looks is not a gap
