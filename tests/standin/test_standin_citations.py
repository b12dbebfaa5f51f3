"""A final decision cites only what backs the choice it names, over real HTTP.

With choices to pick from and nothing seen that backs any of them, a careful model still has to name
one, and it cites nothing for it: the pick rests on no evidence. Until v31 the stand-in cited then
whatever showed the question's subject (the part of the video the question names, without any
choice), and the guess read as grounded. Nor is a line that reports one choice a list of options
because a time in it holds another's number (since v32). Words, times and labels here are the test's own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from picture_helpers import ask, user
from videoatlas.state.schemas import decision_schema
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = pytest.mark.e2e

QUESTION = "Which tag is shown on the gate during the HERON part of the film?"
CHOICES = ["WREN-12", "KITE-40", "RAIL-77", "MOTH-09"]
SUBJECT_ONLY = [
    "[A] 02:10.0: tile 8 (130.0-135.0 s) shows: PART 2 HERON",
    "[B] 02:40.0: tile 9 (160.0-165.0 s) shows: PART 2 HERON",
]
WITH_A_CHOICE = [*SUBJECT_ONLY, "[C] 03:05.0: tile 10 (185.0-190.0 s) shows: PART 2 HERON GATE KITE-40"]


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def decided(
    client: openai.OpenAI, notes: list[str], question: str = QUESTION, choices: list[str] = CHOICES
) -> dict[str, Any]:
    labels = [line[1] for line in notes]
    schema = decision_schema(len(choices), labels).model_json_schema()
    fmt = {"type": "json_schema", "json_schema": {"name": "decision", "schema": schema}}
    options = "\n".join(f"{chr(65 + i)}. {c}" for i, c in enumerate(choices))
    text = "Evidence:\n" + "\n".join(notes) + f"\n\nQuestion: {question}\nChoices:\n{options}\nAnswer."
    value: dict[str, Any] = json.loads(
        ask(client, messages=[user(text)], response_format=fmt).choices[0].message.content or ""
    )
    return value


def test_a_pick_nothing_backs_cites_nothing(client: openai.OpenAI) -> None:
    value = decided(client, SUBJECT_ONLY)
    assert value["evidence"] == []
    assert {j["verdict"] for j in value["judgements"]} == {"no_evidence"}


def test_a_choice_seen_with_the_subject_is_cited_once(client: openai.OpenAI) -> None:
    value = decided(client, WITH_A_CHOICE)
    assert CHOICES[value["answer"]] == "KITE-40"
    assert value["evidence"] == ["C"]


def test_a_number_in_a_time_is_not_a_choice_of_its_own(client: openai.OpenAI) -> None:
    """BAY 7 seen at 01:40: the line reports one choice, not a list of two (its 40 belongs to the time, not to BAY).

    Until v32 a line holding the words of two choices anywhere counted as a list of options and was not read,
    so what it reported was neither the answer nor cited.
    """
    notes = ["[A] seen in frame 400 at 01:40.0: PLATFORM HERON BAY 7", "[B] seen in frame 900 at 03:45.0: PLATFORM"]
    value = decided(client, notes, "Which bay is shown on the HERON platform sign?", ["BAY 12", "BAY 7", "BAY 40"])
    assert value["answer"] == 1 and value["evidence"] == ["A"]
