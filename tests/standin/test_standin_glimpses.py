"""Three things stand-in v20 did not do, each as a careful searcher would (v21 does), over real HTTP.

* A look that took few frames over a long stretch only glimpsed it: what lasts less than the step
  between its frames may lie between them. Once every part was looked at and nothing found, v20
  answered; v21 looks again at what was only glimpsed, with the most frames the look takes.
* For "right after X", a choice seen where X was not seen bears on nothing: v20 took it as the answer.
* Frames split over several pictures (pages of one sheet) are one sequence in time: the frame right
  after the last of one page is the first of the next.

Words, field names and layouts here are the test's own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from picture_helpers import FINISH, SURVEY, Box, ask, picture, said, step_format, user
from videoatlas.environment.timefmt import format_ts
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas_standin.spans import denser_look, glimpses

QUESTION = "Which ferry is shown right after the FOG NOTICE?"
CHOICES = ("MERIDIAN", "CORMORANT", "SANDPIPER")


@pytest.mark.unit
def test_a_look_through_frames_far_apart_is_a_glimpse() -> None:
    text = (
        "1. survey over 00:00.0-10:00.0 through 24 frames: a quay\n"  # 25 s apart: glimpsed
        "2. survey over 100.0-150.0 s through 40 frames: a quay\n"  # 1.25 s apart: seen
        "3. zoom on 200.0-300.0 s, 10 frames: a quay\n"  # not a survey
        "an index of 24 frames was made over 00:00.0-10:00.0\n"  # names no look as used
    )
    assert glimpses(text, ["survey"]) == [((0.0, 600.0), 24)]
    assert glimpses(text, ["survey", "zoom"]) == [((0.0, 600.0), 24), ((200.0, 300.0), 10)]


@pytest.mark.unit
def test_a_closer_look_goes_over_what_was_only_glimpsed_in_turn() -> None:
    whole = [((0.0, 600.0), 24)]
    # 48 frames cover 120 s 2.5 s apart; 4 steps left need 150 s a look to cover the rest
    assert denser_look([(0.0, 600.0)], whole, 600.0, 4, 48) == (0.0, 150.0)
    assert denser_look([(0.0, 600.0), (0.0, 150.0)], whole, 600.0, 3, 48) == (150.0, 300.0)
    assert denser_look([(0.0, 600.0)], whole, 600.0, 20, 48) == (0.0, 120.0)  # no wider than its frames need
    assert denser_look([(0.0, 600.0)], whole, 600.0, None, None) == (0.0, 60.0)  # as many frames as the glimpse
    assert denser_look([(0.0, 600.0), (0.0, 600.0)], [], 600.0, 4, 48) is None  # nothing only glimpsed


@pytest.mark.unit
def test_when_the_steps_left_cannot_look_that_closely_the_closer_looks_still_move_on() -> None:
    """An hour, 8 steps of 90 frames: 5 s apart is as close as they can look, and a look that close counts as seen."""
    hour = [((0.0, 3600.0), 30)]
    assert denser_look([(0.0, 3600.0)], hour, 3600.0, 8, 90) == (0.0, 450.0)
    looked = [(0.0, 3600.0), (0.0, 450.0)]
    assert denser_look(looked, [*hour, ((0.0, 450.0), 90)], 3600.0, 7, 90) == (450.0, 900.0)
    looked.append((450.0, 900.0))
    assert denser_look(looked, [*hour, ((0.0, 450.0), 90), ((450.0, 900.0), 90)], 3600.0, 6, 90) == (900.0, 1350.0)


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def page(first_frame: int, start_s: float, signs: list[str], step_s: float = 2.0) -> str:
    """Six frames, 3 across and 2 down, each labelled with its frame number and time, a sign in its middle."""
    boxes: list[Box] = []
    for i, sign in enumerate(signs):
        x, y = 20 + 320 * (i % 3), 20 + 240 * (i // 3)
        t = start_s + i * step_s
        boxes += [(x, y, f"{first_frame + i * 10} {format_ts(t, 1)}", 20), (x + 20, y + 100, sign, 34)]
    return picture(boxes, size=(960, 480))


def step_schema() -> dict[str, Any]:
    return step_format(SURVEY, FINISH)


SHOWN = page(3000, 500.0, ["QUAY", "QUAY", "CORMORANT", "QUAY", "QUAY", "QUAY"], step_s=25.0)
SURVEYED = (
    f"Question: {QUESTION}\nChoices: A. {CHOICES[0]}  B. {CHOICES[1]}  C. {CHOICES[2]}\n"
    "The video lasts 10:00 (600 s).\n"
    "Log:\n1. survey over 00:00.0-10:00.0 through 24 frames: quay signs, one ferry\n"
    "This is step 2 of 6. Reply with the next step."
)


def next_step(client: openai.OpenAI, text: str) -> dict[str, Any]:
    """The stand-in's reply (as :func:`step_schema`) to the log ``text`` beside a choice and no FOG NOTICE."""
    reply = ask(client, messages=[user(text, SHOWN)], response_format=step_schema())
    got: dict[str, Any] = json.loads(reply.choices[0].message.content or "")
    return got


@pytest.mark.e2e
def test_after_a_glimpse_of_everything_found_nothing_the_next_look_is_closer(client: openai.OpenAI) -> None:
    """A choice in view without the FOG NOTICE before it is not an answer: survey the start again, densely."""
    got = next_step(client, SURVEYED)
    assert got["step"]["act"] == "survey"
    assert got["step"]["n_frames"] == 48  # the closer look takes the most frames it can
    assert got["step"]["spans"] == [{"from_s": 0.0, "to_s": 150.0}]  # 4 steps left for 600 s


@pytest.mark.e2e
def test_a_choice_seen_without_the_notice_does_not_end_the_search(client: openai.OpenAI) -> None:
    """Half the video seen closely, CORMORANT in view with no FOG NOTICE: the other half is looked at next."""
    text = SURVEYED.replace("00:00.0-10:00.0 through 24 frames", "00:00.0-05:00.0 through 240 frames")
    got = next_step(client, text)
    assert got["step"]["act"] == "survey"
    assert got["step"]["spans"] == [{"from_s": 300.0, "to_s": 600.0}]


@pytest.mark.e2e
def test_a_look_that_saw_every_part_closely_leaves_nothing_to_look_at(client: openai.OpenAI) -> None:
    """The same log with frames 2.5 s apart over the whole video: no part was only glimpsed, so no survey."""
    text = SURVEYED.replace("through 24 frames", "through 240 frames")
    got = next_step(client, text)
    assert got["step"]["act"] == "finish"


@pytest.mark.e2e
def test_right_after_walks_from_one_page_of_frames_to_the_next(client: openai.OpenAI) -> None:
    """The FOG NOTICE ends one page and CORMORANT starts the next: that is what comes right after it.

    MERIDIAN, shown twice before the notice, is the best-supported choice on any one page alone.
    """
    first = page(500, 100.0, ["MERIDIAN", "MERIDIAN", "QUAY", "QUAY", "FOG NOTICE", "FOG NOTICE"])
    second = page(560, 112.0, ["CORMORANT", "QUAY", "QUAY", "QUAY", "QUAY", "QUAY"])
    text = f"{QUESTION} Choices: {', '.join(CHOICES)}. Reply with the ferry's name only."
    assert said(client, text, first, second) == "CORMORANT"
    # The pages in the other order are the same frames: the answer does not depend on which came first.
    assert said(client, text, second, first) == "CORMORANT"
