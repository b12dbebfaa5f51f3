"""Where the question's subject is in view and its answer is not, a careful searcher looks closer there (v32).

A request whose actions are looks over stretches of video and a way to finish (no action that opens
or flags a cue) got, until v31, a finish as soon as a survey showed the part of the video the question
names without what it asks of it: the answer was then a guess. From v32 the look that takes a stretch
and a frame count is sent to the subject's stretch with the most frames it takes, while that sees the
stretch closer than the frames in view. Words, field names, layouts and times here are the test's own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from picture_helpers import FINISH, SURVEY, Box, ask, picture, step_format, user
from videoatlas.environment.timefmt import format_ts
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = pytest.mark.e2e

QUESTION = "Which badge number is printed on the locker during the ORCHARD section?"
CHOICES = ("B-114", "K-302", "T-559")


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def page(start_s: float, step_s: float, signs: list[str]) -> str:
    """Six frames, 3 across and 2 down, each labelled with its frame number and time, a sign in its middle.

    A sign's lines (split at ``/``) stand one under the other.
    """
    boxes: list[Box] = []
    for i, sign in enumerate(signs):
        x, y = 20 + 320 * (i % 3), 20 + 240 * (i // 3)
        t = start_s + i * step_s
        boxes += [(x, y, f"{int(t * 4)} {format_ts(t, 1)}", 20)]
        boxes += [(x + 20, y + 90 + 50 * k, line, 34) for k, line in enumerate(sign.split("/"))]
    return picture(boxes, size=(960, 480))


def step_schema(opens: bool = False) -> dict[str, Any]:
    """A survey, a close look at one clip, a way to open a tile (only with ``opens``) and a finish."""
    time = {"type": "number", "minimum": 0, "maximum": 600}
    inspect = {
        "type": "object",
        "properties": {"act": {"const": "inspect"}, "from_s": time, "to_s": time},
        "required": ["act", "from_s", "to_s"],
    }
    expand = {
        "type": "object",
        "properties": {"act": {"const": "expand"}, "tile": {"type": "integer"}},
        "required": ["act", "tile"],
    }
    return step_format(SURVEY, inspect, *([expand] if opens else []), FINISH)


LOG = (
    f"Question: {QUESTION}\nChoices:\nA. {CHOICES[0]}\nB. {CHOICES[1]}\nC. {CHOICES[2]}\n"
    "The video lasts 10:00 (600 s).\n"
    "Log:\n1. survey over 00:00.0-10:00.0 through 24 frames: section titles\n"
    "This is step 2 of 6. Reply with the next step."
)
SECTIONS = ["MEADOW", "MEADOW", "ORCHARD", "ORCHARD", "RIVER", "RIVER"]


def next_step(client: openai.OpenAI, shown: str, opens: bool = False) -> dict[str, Any]:
    reply = ask(client, messages=[user(LOG, shown)], response_format=step_schema(opens))
    got: dict[str, Any] = json.loads(reply.choices[0].message.content or "")
    return dict(got["step"])


def test_the_subject_in_view_without_its_answer_is_looked_at_closer(client: openai.OpenAI) -> None:
    """ORCHARD shows at 02:20 and 02:40, frames 20 s apart: its stretch, 140-180 s, surveyed with 48 frames."""
    step = next_step(client, page(100.0, 20.0, SECTIONS))
    assert step == {"act": "survey", "spans": [{"from_s": 140.0, "to_s": 180.0}], "n_frames": 48}


def test_a_subject_at_the_end_of_the_video_is_looked_at_up_to_its_end(client: openai.OpenAI) -> None:
    """ORCHARD in the last two frames, at 09:40 and 10:00: the look stops at the video's end (the schema's bound)."""
    step = next_step(client, page(500.0, 20.0, ["RIVER"] * 4 + ["ORCHARD"] * 2))
    assert step == {"act": "survey", "spans": [{"from_s": 580.0, "to_s": 600.0}], "n_frames": 48}


def test_a_stretch_seen_that_closely_already_is_not_looked_at_again(client: openai.OpenAI) -> None:
    """The same titles 2 s apart: 48 frames over their 4 s would see them no closer worth the step."""
    assert next_step(client, page(100.0, 2.0, SECTIONS)) == {"act": "finish"}


def test_the_answer_in_view_finishes(client: openai.OpenAI) -> None:
    signs = ["MEADOW", "MEADOW", "ORCHARD", "ORCHARD/K-302", "RIVER", "RIVER"]
    assert next_step(client, page(100.0, 20.0, signs)) == {"act": "finish"}


def test_a_request_that_can_open_a_frame_opens_it_instead(client: openai.OpenAI) -> None:
    """With an action that opens what is in view, that action is the closer look (as before v32)."""
    step = next_step(client, page(100.0, 20.0, SECTIONS), opens=True)
    assert step == {"act": "expand", "tile": 560}
