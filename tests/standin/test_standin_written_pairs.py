"""Labels and values a function's result writes, and values in letters on their label's line, over real HTTP.

A value a tool returned ("ROOM: 512", "The plate reads KX-4471") fills a structured reply's field as a
value read in a picture does, matched by meaning and typed by the schema. A sign that prints a value
without digits on its label's line ("CITY PARIS", "GATE B") gives that value to the field whose
meaning fits the label, and to no other.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from picture_helpers import ask, calls_of, function, picture, user
from videoatlas_standin.labels import Labelled, written_pairs
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    """A client of a stand-in started as ``--enable-auto-tool-choice --tool-call-parser hermes``."""
    config = StandinConfig(enable_auto_tool_choice=True, tool_call_parser="hermes")
    with RunningServer(StandinServer(config, reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def structured(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


def test_a_value_a_tool_returned_fills_the_structured_reply(client: openai.OpenAI) -> None:
    tools = [function("find_booking", "Find the guest's booking in the hotel system.", {"guest": {"type": "string"}})]
    messages: list[Any] = [{"role": "user", "content": "Which room is Ada Lovelace staying in? Use the tool."}]
    first = ask(client, messages=messages, tools=tools, tool_choice="required")
    [(name, _)] = calls_of(first, tools)
    [call] = first.choices[0].message.tool_calls or []
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "Booking found. ROOM: 512, NIGHTS: 3."})
    fmt = structured("booking", {"room_number": {"type": "integer"}, "nights": {"type": "integer"}})
    second = ask(client, messages=messages, response_format=fmt)
    assert name == "find_booking"
    assert json.loads(second.choices[0].message.content or "") == {"room_number": 512, "nights": 3}


def test_a_plate_a_tool_reported_in_a_sentence_is_the_value(client: openai.OpenAI) -> None:
    messages: list[Any] = [
        {"role": "user", "content": "What is the plate of the car at the gate?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "camera", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "A grey car waits at the gate. The plate reads KX-4471."},
    ]
    fmt = structured("car", {"plate": {"type": "string"}, "colour_seen": {"type": "string"}})
    reply = json.loads(ask(client, messages=messages, response_format=fmt).choices[0].message.content or "")
    assert reply["plate"] == "KX-4471"


def test_text_the_user_wrote_is_not_a_value_read() -> None:
    assert written_pairs("ROOM: 512, NIGHTS: 3.") == [Labelled("ROOM", "512", -1), Labelled("NIGHTS", "3", -1)]
    assert written_pairs("Nothing was found.") == []


CITY = picture([(60, 60, "CITY PARIS", 64), (60, 190, "GATE B", 64)])
"""Values in letters only, each on its label's line."""


def test_a_value_in_letters_on_its_labels_line_fills_the_field_it_fits(client: openai.OpenAI) -> None:
    fmt = structured("boarding", {"city": {"type": "string"}, "gate": {"type": "string"}})
    reply = ask(client, messages=[user("Where does this flight go, and from which gate?", CITY)], response_format=fmt)
    assert json.loads(reply.choices[0].message.content or "") == {"city": "PARIS", "gate": "B"}


def test_a_named_function_gets_the_letters_on_its_arguments_label(client: openai.OpenAI) -> None:
    tools = [function("book_train", "Book a train to a destination city.", {"destination_city": {"type": "string"}})]
    named = {"type": "function", "function": {"name": "book_train"}}
    reply = ask(
        client, messages=[user("Book me a train to the city on this sign.", CITY)], tools=tools, tool_choice=named
    )
    assert calls_of(reply, tools) == [("book_train", {"destination_city": "PARIS"})]


def test_a_field_no_label_fits_gets_no_letters(client: openai.OpenAI) -> None:
    fmt = structured("boarding", {"seat_row": {"type": "string"}})
    reply = ask(client, messages=[user("Which seat row is printed here?", CITY)], response_format=fmt)
    assert json.loads(reply.choices[0].message.content or "") == {"seat_row": ""}
