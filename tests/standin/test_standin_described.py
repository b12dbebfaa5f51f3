"""An enum whose members the request's text describes takes the member the question's reach fits, over real HTTP.

A prompt may say what each value it offers is for ('Use "x" when ...'). A model reads those sentences:
a question that needs the whole video seen (how many times, which comes first) takes the value said to
be for many moments, one thing to find the value said to be for one place. Until v30 the stand-in had
a rule for one pair of member names only (a search's breadth or depth); the members, words and
questions here are the test's own, not any agent's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from picture_helpers import ask, user
from videoatlas_standin.described import descriptions, member_by_reach, reach
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = pytest.mark.e2e

COUNT = "How many times does the heron cross the river?"
ORDER = "Which boat passes the lock first: the barge, the skiff or the ferry?"
ONE_THING = "What is painted on the hull of the red barge?"
GUIDE = (
    'Use "spot" if a single precise frame of the film answers it. '
    'Use "survey" if the answer needs several places in the film compared (tallying, ranking events).'
)


def schema(members: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"why": {"type": "string"}, "plan": {"enum": members}},
        "required": ["why", "plan"],
    }


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def chosen(client: openai.OpenAI, question: str, guide: str, members: list[str]) -> Any:
    fmt = {"type": "json_schema", "json_schema": {"name": "plan", "schema": schema(members)}}
    reply = ask(client, messages=[user(f"Question: {question}\n{guide}")], response_format=fmt)
    return json.loads(reply.choices[0].message.content or "")["plan"]


def test_a_wide_question_takes_the_member_described_for_many_moments(client: openai.OpenAI) -> None:
    assert chosen(client, COUNT, GUIDE, ["spot", "survey"]) == "survey"
    assert chosen(client, ORDER, GUIDE, ["spot", "survey"]) == "survey"
    assert chosen(client, ONE_THING, GUIDE, ["spot", "survey"]) == "spot"
    # The order the schema lists them in does not matter; the sentences do.
    assert chosen(client, ONE_THING, GUIDE, ["survey", "spot"]) == "spot"
    assert chosen(client, COUNT, GUIDE, ["survey", "spot"]) == "survey"


def test_members_the_text_does_not_tell_apart_decide_nothing(client: openai.OpenAI) -> None:
    """Named together in one sentence, or not at all: the first member, as for any enum the text leaves open."""
    together = 'Answer "spot" or "survey".'
    assert chosen(client, COUNT, together, ["spot", "survey"]) == "spot"
    assert chosen(client, COUNT, "Choose a plan.", ["spot", "survey"]) == "spot"


def test_reach_counts_words_of_spread_against_words_of_one_place() -> None:
    found = descriptions(["spot", "survey"], GUIDE)
    assert set(found) == {0, 1}
    assert reach(found[0]) < 0 < reach(found[1])
    assert member_by_reach(["spot", "survey"], GUIDE, wide=True) == 1
    assert member_by_reach(["spot", "survey"], GUIDE, wide=False) == 0
    alike = 'Use "a" for one frame. Use "b" for one shot.'
    assert member_by_reach(["a", "b"], alike, wide=True) is None
