"""A question that needs all of the video seen keeps covering it after a first sighting, over real HTTP.

How many times something appears, or which of several things comes first, is not settled by one
sighting: any stretch nobody looked at may hold another. A plain ``openai`` client asks for a reply
schema whose ``step`` is one of several variants (``peek`` with ``from_s``/``to_s``, ``reply``), or
offers the same as functions. After a look at 0-60 s of a 600 s video that saw the thing once, with
steps left, the stand-in looks at the next stretch nobody covered; a question about one detail that
the look found is answered instead, and a count with no step left is answered.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import openai
import pytest

from picture_helpers import ask, calls_of
from videoatlas.standin.perception import Reader
from videoatlas.standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = pytest.mark.e2e

TIME = {"type": "number", "minimum": 0, "maximum": 600}
PEEK = {
    "type": "object",
    "properties": {"act": {"const": "peek"}, "from_s": TIME, "to_s": TIME},
    "required": ["act", "from_s", "to_s"],
}
REPLY = {
    "type": "object",
    "properties": {"act": {"const": "reply"}, "text": {"type": "string"}},
    "required": ["act", "text"],
}
ACTIONS = "Actions:\n- peek: view the frames from one time to another\n- reply: finish with the final answer"
COUNT = "How many times does the blue kite cross the screen?"
ORDER = "Which comes first, the blue kite or the red balloon?"
DETAIL = "What colour is the blue kite's tail?"
PEEKED = '{"step": {"act": "peek", "from_s": 0, "to_s": 60}}'
SEEN_ONCE = "Frames 0-60 s: at 00:21 the blue kite crosses from left to right; a red tail streams behind it."


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    config = StandinConfig(enable_auto_tool_choice=True, tool_call_parser="hermes")
    with RunningServer(StandinServer(config, reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def step(client: openai.OpenAI, question: str, system: str, found: str) -> Any:
    """The stand-in's next step after one peek at 0-60 s that reported ``found``, checked against its schema."""
    messages: list[Any] = [
        {"role": "system", "content": system},
        {"role": "user", "content": question},
        {"role": "assistant", "content": PEEKED},
        {"role": "user", "content": found},
    ]
    wanted = {"type": "object", "properties": {"step": {"anyOf": [REPLY, PEEK]}}, "required": ["step"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "step", "schema": wanted}}
    reply = ask(client, messages=messages, response_format=fmt)
    value = json.loads(reply.choices[0].message.content or "")
    jsonschema.validate(value, wanted)
    return value["step"]


@pytest.mark.parametrize("question", [COUNT, ORDER])
def test_one_sighting_does_not_settle_a_question_about_the_whole_video(client: openai.OpenAI, question: str) -> None:
    got = step(client, question, f"The video is 600 s long. You have 20 steps left.\n{ACTIONS}", SEEN_ONCE)
    assert got == {"act": "peek", "from_s": 60, "to_s": 120}  # the next minute, as wide as the last look


def test_the_steps_left_set_how_wide_the_next_look_is(client: openai.OpenAI) -> None:
    """540 s not looked at and 3 steps left: the next look takes 180 s."""
    got = step(client, COUNT, f"The video is 600 s long. You have 3 steps left.\n{ACTIONS}", SEEN_ONCE)
    assert got == {"act": "peek", "from_s": 60, "to_s": 240}


def test_a_detail_the_look_found_is_answered(client: openai.OpenAI) -> None:
    got = step(client, DETAIL, f"The video is 600 s long. You have 20 steps left.\n{ACTIONS}", SEEN_ONCE)
    assert got["act"] == "reply"


def test_a_count_with_no_step_left_is_answered(client: openai.OpenAI) -> None:
    got = step(client, COUNT, f"The video is 600 s long. This is step 2 of 2.\n{ACTIONS}", SEEN_ONCE)
    assert got["act"] == "reply"


def test_a_count_over_a_video_looked_at_whole_is_answered(client: openai.OpenAI) -> None:
    whole = "Frames 0-600 s: at 00:21 and at 07:40 the blue kite crosses from left to right."
    messages: list[Any] = [
        {"role": "system", "content": f"The video is 600 s long. You have 20 steps left.\n{ACTIONS}"},
        {"role": "user", "content": COUNT},
        {"role": "assistant", "content": '{"step": {"act": "peek", "from_s": 0, "to_s": 600}}'},
        {"role": "user", "content": whole},
    ]
    wanted = {"type": "object", "properties": {"step": {"anyOf": [PEEK, REPLY]}}, "required": ["step"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "step", "schema": wanted}}
    value = json.loads(ask(client, messages=messages, response_format=fmt).choices[0].message.content or "")
    assert value["step"]["act"] == "reply"


def test_a_function_that_looks_is_sent_on_after_one_sighting(client: openai.OpenAI) -> None:
    """The same with functions: the earlier call's arguments say where it looked."""
    peek = {
        "type": "function",
        "function": {
            "name": "peek",
            "description": "view the frames from one time to another",
            "parameters": {
                "type": "object",
                "properties": {"from_s": TIME, "to_s": TIME},
                "required": ["from_s", "to_s"],
            },
        },
    }
    done = {
        "type": "function",
        "function": {
            "name": "final_answer",
            "description": "finish with the final answer",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        },
    }
    call = {"id": "call_1", "type": "function", "function": {"name": "peek", "arguments": '{"from_s": 0, "to_s": 60}'}}
    messages: list[Any] = [
        {"role": "system", "content": "The video is 600 s long. You have 20 steps left."},
        {"role": "user", "content": COUNT},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": SEEN_ONCE},
    ]
    reply = ask(client, messages=messages, tools=[peek, done], tool_choice="required")
    assert calls_of(reply, [peek, done]) == [("peek", {"from_s": 60, "to_s": 120})]
