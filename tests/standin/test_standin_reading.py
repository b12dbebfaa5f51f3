"""Values read from labelled pictures fill tool arguments and JSON, over real HTTP, as clients ask for them.

Pictures drawn here carry text the way signs, plates, boards and tickets print it: a label above its
value, a label and a value on one line, ``key: value``. A plain ``openai`` client (each
``tool_choice``, JSON asked for in words, a two-turn tool conversation) and LangChain
(``bind_tools``, ``with_structured_output``) must get the values the pictures show, typed as their
schemas say, and an argument nothing labels comes back empty, never filled with the question's words.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from picture_helpers import ask, calls_of, function, picture, user
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas_standin.version import STANDIN_MODEL

pytestmark = pytest.mark.e2e

PLATE = picture([(60, 60, "PLATE", 34), (60, 130, "KX-4471", 72)])
"""A label above its value."""
BOARD = picture([(60, 70, "GATE 17", 56), (60, 190, "FLIGHT BA 2290", 56)])
"""Labels and values on one line each."""
SIGN = picture([(80, 120, "ROOM 512", 72)])
OTHER_SIGN = picture([(80, 120, "ROOM 208", 72)])
TICKET = picture([(50, 60, "TICKET NO: 58213", 44), (50, 170, "BAY: 7", 44)])
"""Keys and values with a colon."""


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    """A client of a stand-in started as ``--enable-auto-tool-choice --tool-call-parser hermes``."""
    config = StandinConfig(enable_auto_tool_choice=True, tool_call_parser="hermes")
    with RunningServer(StandinServer(config, reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


REPORT = function("report_plate", "Report the licence plate of the car in the photo.", {"plate": {"type": "string"}})
GIVE_UP = function("give_up", "Give up when the photo does not show what was asked.", {})


PLATE_QUESTION = "What is the plate number of the car in this photo?"


def test_none_answers_with_the_value_read(client: openai.OpenAI) -> None:
    reply = ask(client, messages=[user(PLATE_QUESTION, PLATE)], tools=[REPORT, GIVE_UP], tool_choice="none")
    assert reply.choices[0].message.tool_calls is None
    assert reply.choices[0].message.content == "KX-4471"


@pytest.mark.parametrize("choice", ["required", "auto"])
def test_a_function_it_can_fill_from_the_picture_is_called_not_giving_up(client: openai.OpenAI, choice: str) -> None:
    tools = [GIVE_UP, REPORT]
    reply = ask(client, messages=[user(PLATE_QUESTION, PLATE)], tools=tools, tool_choice=choice)
    assert calls_of(reply, tools) == [("report_plate", {"plate": "KX-4471"})]


def test_a_named_function_gets_the_value_read_not_words_of_the_question(client: openai.OpenAI) -> None:
    tools = [REPORT, GIVE_UP]
    named = {"type": "function", "function": {"name": "report_plate"}}
    reply = ask(client, messages=[user(PLATE_QUESTION, PLATE)], tools=tools, tool_choice=named)
    assert calls_of(reply, tools) == [("report_plate", {"plate": "KX-4471"})]
    assert reply.choices[0].finish_reason == "stop"


def test_arguments_are_typed_by_their_schema_and_matched_by_meaning(client: openai.OpenAI) -> None:
    """An integer from the digits, a string as read, each argument from the label that means it."""
    tools = [
        function(
            "find_departure",
            "Find a departure on the board.",
            {
                "flight_code": {"type": "string", "description": "the flight's code"},
                "gate_number": {"type": "integer", "description": "where to board"},
            },
        )
    ]
    question = "Which gate does the flight leave from?"
    reply = ask(client, messages=[user(question, BOARD)], tools=tools, tool_choice="required")
    assert calls_of(reply, tools) == [("find_departure", {"flight_code": "BA 2290", "gate_number": 17})]


def test_an_argument_nothing_labels_is_left_empty(client: openai.OpenAI) -> None:
    tools = [function("book_taxi", "Book a taxi for the passenger.", {"destination": {"type": "string"}})]
    named = {"type": "function", "function": {"name": "book_taxi"}}
    reply = ask(client, messages=[user("Where does the passenger want to go?", BOARD)], tools=tools, tool_choice=named)
    assert calls_of(reply, tools) == [("book_taxi", {"destination": ""})]


def test_json_asked_for_in_words_holds_the_values_read(client: openai.OpenAI) -> None:
    keys = 'Reply in JSON with the keys "ticket_number" and "bay".'
    reply = ask(client, messages=[user(f"What does this ticket say? {keys}", TICKET)])
    assert json.loads(reply.choices[0].message.content or "") == {"ticket_number": "58213", "bay": "7"}
    example = 'Reply with a JSON object like {"ticket": 0, "bay": 0}.'
    typed = ask(client, messages=[user(f"What does this ticket say? {example}", TICKET)])
    assert json.loads(typed.choices[0].message.content or "") == {"ticket": 58213, "bay": 7}


def test_structured_outputs_take_an_enum_member_by_match(client: openai.OpenAI) -> None:
    schema = {
        "type": "object",
        "properties": {"bay": {"type": "string", "enum": ["5", "6", "7", "8"]}, "ticket_no": {"type": "integer"}},
        "required": ["bay", "ticket_no"],
        "additionalProperties": False,
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "ticket", "schema": schema}}
    reply = ask(client, messages=[user("Read the ticket.", TICKET)], response_format=fmt)
    assert json.loads(reply.choices[0].message.content or "") == {"bay": "7", "ticket_no": 58213}


def test_a_two_turn_conversation_asking_for_a_lookup_calls_the_tool(client: openai.OpenAI) -> None:
    tools = [
        function(
            "lookup_room",
            "Look a room up in the building directory.",
            {"room_number": {"type": "integer", "description": "the room to look up"}},
        )
    ]
    messages: list[Any] = [
        user("Which room is this sign for?", SIGN),
        {"role": "assistant", "content": "ROOM 512"},
        {"role": "user", "content": "Please look that room up in the directory with your tool."},
    ]
    first = ask(client, messages=messages, tools=tools)
    assert calls_of(first, tools) == [("lookup_room", {"room_number": 512})]
    [call] = first.choices[0].message.tool_calls or []
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "Room 512: third floor, east wing."})
    second = ask(client, messages=messages, tools=tools)  # a request with tools is answered with a call
    assert calls_of(second, tools) == [("lookup_room", {"room_number": 512})]


def test_langchain_bound_tools_and_structured_output_get_the_values_read(client: openai.OpenAI) -> None:
    from langchain_openai import ChatOpenAI
    from pydantic import BaseModel, Field, SecretStr

    class ReportPlate(BaseModel):
        """Report the licence plate of the car in the photo."""

        plate: str = Field(description="the plate as printed")

    class Ticket(BaseModel):
        """What a parking ticket says."""

        ticket_number: int
        bay: str

    model = ChatOpenAI(base_url=str(client.base_url), api_key=SecretStr("none"), model=STANDIN_MODEL, max_retries=0)
    reply = model.bind_tools([ReportPlate], tool_choice="required").invoke([user(PLATE_QUESTION, PLATE)])
    [call] = reply.tool_calls
    assert (call["name"], call["args"]) == ("ReportPlate", {"plate": "KX-4471"})
    ticket = model.with_structured_output(Ticket).invoke([user("Read the ticket.", TICKET)])
    assert ticket == Ticket(ticket_number=58213, bay="7")
