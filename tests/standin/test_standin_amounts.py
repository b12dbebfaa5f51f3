"""An enum of amounts (how many pictures to take) is chosen by what the question needs, over real HTTP.

A model offered a choice of how densely to look (a field named as an amount: ``num_...``, a sample
size) takes the densest look for a question that needs all of the video seen (how many times, which
comes first), and the first offered for one thing to find. Until v19 the stand-in took the first member
of every such enum, so an agent that lets its model choose how many frames to survey never looked
densely enough to count. The field names, words and numbers here are the test's own, not any agent's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from picture_helpers import ask, user
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = pytest.mark.e2e

COUNT = "How many times does the heron cross the river?"
ORDER = "Which boat passes the lock first: the barge, the skiff or the ferry?"
ONE_THING = "What is painted on the hull of the red barge?"


def schema(field: str, members: list[Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"reason": {"type": "string"}, field: {"enum": members}},
        "required": ["reason", field],
    }


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def chosen(client: openai.OpenAI, question: str, field: str, members: list[Any]) -> Any:
    fmt = {"type": "json_schema", "json_schema": {"name": "look", "schema": schema(field, members)}}
    text = f"Question: {question}\nChoose how to look at the footage next."
    reply = ask(client, messages=[user(text)], response_format=fmt)
    return json.loads(reply.choices[0].message.content or "")[field]


@pytest.mark.parametrize("field", ["sample_size", "num_stills", "pass_density"])
def test_a_count_or_an_order_takes_the_densest_look_offered(client: openai.OpenAI, field: str) -> None:
    assert chosen(client, COUNT, field, [24, 48, 96, 192]) == 192
    assert chosen(client, ORDER, field, [24, 48, 96, 192]) == 192
    assert chosen(client, COUNT, field, [2.5, 8.5, 4.0]) == 8.5  # the largest, wherever it is listed


def test_one_thing_to_find_takes_the_first_member_as_before(client: openai.OpenAI) -> None:
    assert chosen(client, ONE_THING, "sample_size", [24, 48, 96, 192]) == 24
    assert chosen(client, ONE_THING, "sample_size", [96, 24]) == 96


@pytest.mark.parametrize("field", ["confidence", "start_time", "tile", "segment", "stills"])
def test_an_enum_of_numbers_not_named_as_an_amount_is_not_one(client: openai.OpenAI, field: str) -> None:
    """A score, a time or an id (a segment to open next) is never taken as the densest look."""
    assert chosen(client, COUNT, field, [1, 2, 3, 4, 5]) != 5


def test_a_whole_float_member_is_written_as_the_grammar_writes_it(client: openai.OpenAI) -> None:
    """``8.0`` in an enum is ``8`` in the schema's grammar (xgrammar); until v19 the reply wrote ``8.0``: refused."""
    assert chosen(client, ONE_THING, "zoom", [8.0, 2.5]) == 8
    assert chosen(client, ONE_THING, "zoom", [2.5, 8.0]) == 2.5


def test_words_and_booleans_are_not_amounts(client: openai.OpenAI) -> None:
    assert chosen(client, COUNT, "pace", ["slow", "medium", "fast"]) == "slow"
    assert chosen(client, COUNT, "pace", [False, True]) is False
