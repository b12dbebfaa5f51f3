"""A line that says what was searched for reports a search, not a sighting, over real HTTP.

An agent's history repeats its own queries beside the stretch they were run on ("skimmed
100.0-116.0 s for "a QUINCE crate""). A model reads that as where someone looked; the stand-in read
the query's words as a thing seen there, so one empty look settled an open question and added one to
a count. Since v18 the object of a search (a quoted query, the words after "looking for") is left out
of what a line reports (:func:`videoatlas_standin.language.unsought`). Words here are the test's own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from picture_helpers import ask, said, user
from videoatlas_standin.language import unsought
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

QUESTION = "Which code is stencilled on the QUINCE crate?"
SEARCHED = 'Turn 1: skim 100.0-116.0 s for "a QUINCE crate with a stencilled code" (8 frames)'
LOOKED = "Step 2 (300.0-316.0 s): looking for the QUINCE crate"
SEEN = "[A] 410.0-412.0 s: a QUINCE crate stencilled QX-41"
SUFFICIENT = {
    "type": "object",
    "properties": {"sufficient": {"type": "boolean"}},
    "required": ["sufficient"],
}


@pytest.mark.unit
@pytest.mark.parametrize(
    ("line", "left"),
    [
        (SEARCHED, "Turn 1: skim 100.0-116.0 s (8 frames)"),
        (LOOKED, "Step 2 (300.0-316.0 s):"),
        ('query: "red kite" at 12.0 s', "at 12.0 s"),
        ("03:26 searched for the kite but found a KITE-9 tag", "03:26 but found a KITE-9 tag"),
        ('[12.0-14.0 s] the sign reads "GATE 27"', '[12.0-14.0 s] the sign reads "GATE 27"'),
        ("cell 3 (12.0-14.0 s) shows: a kite for sale", "cell 3 (12.0-14.0 s) shows: a kite for sale"),
    ],
)
def test_what_a_line_says_was_searched_for_is_left_out(line: str, left: str) -> None:
    assert " ".join(unsought(line).split()) == left


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def filled(client: openai.OpenAI, text: str, schema: dict[str, Any]) -> Any:
    fmt = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
    reply = ask(client, messages=[user(text)], response_format=fmt)
    return json.loads(reply.choices[0].message.content or "")


@pytest.mark.e2e
def test_searches_alone_do_not_settle_an_open_question(client: openai.OpenAI) -> None:
    asked = f"Question: {QUESTION}\nWhat was done so far:\n"
    searched = f"{asked}{SEARCHED}\n{LOOKED}\nSay whether what was seen is sufficient."
    assert filled(client, searched, SUFFICIENT) == {"sufficient": False}
    seen = f"{asked}{SEARCHED}\n{SEEN}\nSay whether what was seen is sufficient."
    assert filled(client, seen, SUFFICIENT) == {"sufficient": True}


@pytest.mark.e2e
def test_a_search_is_not_counted_as_an_appearance(client: openai.OpenAI) -> None:
    notes = f"{SEARCHED}\n{LOOKED}\n{SEEN}\n[B] 520.0-522.0 s: the QUINCE crate again, on a cart"
    reply = said(client, f"{notes}\nHow many separate times does the QUINCE crate appear?")
    assert reply == "2"
