"""Two misreadings of stand-in v19, over real HTTP (v20 reads both as a model would).

* A word run into the number beside it ("GATE 27" read as ``GATE27``) was one word, so a short word
  the question names was not seen there, and the value asked for came back with the word stuck to it.
* A reply with one field per listed item (``part_7`` for the line "window 7: 00:20.0-00:32.0") got the
  same text and the lowest score in every field: the items' stretches were never looked at. Now each
  is judged on the frames shown inside its own stretch, and a score field takes the schema's scale.

Words, field names and layouts here are the test's own.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from action_video import Sign, write_signs_video
from picture_helpers import ask, picture, said, user
from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.frames import FrameSource
from videoatlas.environment.timefmt import format_ts
from videoatlas_standin.items import listed_scores, listed_spans
from videoatlas_standin.language import read_words, word_parts
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer


@pytest.mark.unit
@pytest.mark.parametrize(
    ("word", "parts"),
    [("BERTH14", ["BERTH", "14"]), ("14B", ["14", "B"]), ("KX4417", ["KX", "4417"]), ("NL-5645", ["NL-5645"]),
     ("A4B", ["A4B"]), ("CREDITS", ["CREDITS"]), ("2024", ["2024"])],
)  # fmt: skip
def test_a_word_run_into_a_number_is_read_as_its_two_parts(word: str, parts: list[str]) -> None:
    assert word_parts(word) == parts


@pytest.mark.unit
def test_the_words_read_keep_the_run_and_add_its_parts() -> None:
    assert read_words("BERTH14 NORTH") == {"BERTH14", "BERTH", "14", "N0RTH"}
    assert "RED" not in read_words("CREDITS")  # letters inside letters are still not a word


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


@pytest.mark.e2e
@pytest.mark.parametrize(("drawn", "question", "value"), [
    ("DOCK7", "Which dock number does the sign show?", "7"),  # a short word: seen only as a word of its own
    ("BERTH14", "Which berth number does the sign show?", "14"),
])  # fmt: skip
def test_the_number_run_into_a_word_is_the_value_asked_for(
    client: openai.OpenAI, drawn: str, question: str, value: str
) -> None:
    """The sign is drawn without a space: what the question names is seen there, and its number is the answer."""
    sign = picture([(60, 60, drawn, 72), (60, 220, "HARBOUR OFFICE", 36)])
    assert said(client, question, sign) == value


def per_item_schema(ids: list[int]) -> dict[str, Any]:
    item = {
        "type": "object",
        "properties": {"comment": {"type": "string"}, "score": {"type": "integer", "minimum": 0, "maximum": 10}},
        "required": ["comment", "score"],
    }
    return {"type": "object", "properties": {f"part_{i}": item for i in ids}, "required": [f"part_{i}" for i in ids]}


@pytest.mark.e2e
@pytest.mark.parametrize(
    "times",
    [
        [10.0, 20.0, 32.0, 45.0, 55.0],
        # labelled to whole seconds (10, 20, 32, 45, 55), while the windows end at the frames' own times (v23)
        [9.6, 20.4, 31.6, 44.6, 55.4],
    ],
)
async def test_each_listed_item_is_judged_on_the_frames_inside_its_own_stretch(
    client: openai.OpenAI, tmp_path: Path, times: list[float]
) -> None:
    """Five frames of a 60 s video cut it into six windows; the HERON is on screen at 30-35 s only."""
    signs = (Sign(30.0, 35.0, "HERON", 52, 320, 180, card=(20, 90, 150)),)
    source = FrameSource(write_signs_video(tmp_path / "heron.mp4", signs, 60.0))
    try:
        pages = await VideoAtlas(source, k=4, cell_px=64).amosaic(times, 3, 2, 256, first_id=1)
    finally:
        source.close()
    cuts = [0.0, *times, 60.0]
    listed = [f"window {7 + i}: {format_ts(a, 1)}-{format_ts(b, 1)} ({a:.1f}-{b:.1f} s)"
              for i, (a, b) in enumerate(itertools.pairwise(cuts))]  # fmt: skip
    text = "Question: When is the HERON seen?\nThe frames shown cut the video into:\n" + "\n".join(listed) + "\n"
    text += "Rate each window for the question."
    url = "data:image/jpeg;base64," + base64.b64encode(pages[0].jpeg).decode()
    fmt = {"type": "json_schema", "json_schema": {"name": "rates", "schema": per_item_schema(list(range(7, 13)))}}
    reply = json.loads(ask(client, messages=[user(text, url)], response_format=fmt).choices[0].message.content or "")
    scores = {int(k.removeprefix("part_")): v["score"] for k, v in reply.items()}
    # Windows 9 (20-32 s) and 10 (32-45 s) end or start at the frame that shows the HERON.
    assert scores[9] == scores[10] == 9
    assert all(scores[i] < 9 for i in (7, 8, 11, 12))
    assert "HERON" in reply["part_9"]["comment"] and "HERON" not in reply["part_12"]["comment"]
    assert len({v["comment"] for v in reply.values()}) > 1


@pytest.mark.e2e
@pytest.mark.parametrize(("notes", "question", "value"), [
    ("step 3 (40.0-48.0 s): frame 12 shows: OFFICE DOCK7; a crane", "Which dock number does the sign show?", "7"),
    ("at 12.5 s the DOCK sign, seen 30.0 s in, reads 7", "Which dock number does the sign show?", "7"),
    ("frame 4 (9.0 s) shows: a crate; CODE RX-7730 on a parcel", "What code is on the parcel?", "RX-7730"),
])  # fmt: skip
def test_notes_without_pictures_give_the_value_written_after_what_the_question_names(
    client: openai.OpenAI, notes: str, question: str, value: str
) -> None:
    """A text-only request (an agent's own notes): times and the question's own words are passed over."""
    assert said(client, f"Notes from the footage:\n{notes}\n\nQuestion: {question}") == value


ORDER_NOTES = """Question: Which ferry leaves the pier first?
Options: ALDER; BIRCH; CEDAR
The video is 600 s long. You have 10 steps left.
Actions:
- open: open a stretch of the video from one time to another
- reply: finish with the final answer
Reports so far:
- 300.0-316.0 s: gulls over the water
- 316.0-332.0 s: an empty pier
- 400.0-410.0 s: the BIRCH ferry leaves the pier
- 560.0-576.0 s: the CEDAR ferry leaves the pier"""


@pytest.mark.e2e
def test_which_comes_first_looks_before_the_earliest_choice_seen(client: openai.OpenAI) -> None:
    """Only a ferry seen before 400 s can change the answer: the next look opens the start of the video."""
    time = {"type": "number", "minimum": 0, "maximum": 600}
    opened = {"type": "object", "properties": {"act": {"const": "open"}, "start_s": time, "end_s": time},
              "required": ["act", "start_s", "end_s"]}  # fmt: skip
    reply = {"type": "object", "properties": {"act": {"const": "reply"}, "text": {"type": "string"}},
             "required": ["act", "text"]}  # fmt: skip
    wanted = {"type": "object", "properties": {"step": {"anyOf": [reply, opened]}}, "required": ["step"]}
    fmt = {"type": "json_schema", "json_schema": {"name": "step", "schema": wanted}}
    got = json.loads(ask(client, messages=[user(ORDER_NOTES)], response_format=fmt).choices[0].message.content or "")
    assert got["step"]["act"] == "open" and got["step"]["start_s"] == 0.0 and 0.0 < got["step"]["end_s"] <= 300.0
    last = ORDER_NOTES.replace("leaves the pier first", "leaves the pier last")
    got = json.loads(ask(client, messages=[user(last)], response_format=fmt).choices[0].message.content or "")
    assert got["step"]["act"] == "open" and got["step"]["start_s"] >= 576.0  # after the latest: 576-600 s


@pytest.mark.unit
def test_numbered_lines_give_their_items_stretches_and_times_number_nothing() -> None:
    text = "stretch 12: 00:10.0-00:20.0 (10.0-20.0 s)\n3.5-4.0 s: a crane\n[5] 1.0-2.0 s\n7. 30.0-40.0 s\n00:15.0: said"
    assert listed_spans(text) == {12: (10.0, 20.0), 5: (1.0, 2.0), 7: (30.0, 40.0)}
    assert listed_scores("box 4: 00:10-00:20, score 0.31\nbox 7: trees, relevance: 8\n3.5 s: score 0.9") == {
        4: 0.31,
        7: 8.0,
    }


PICK = {
    "type": "object",
    "properties": {"why": {"type": "string", "maxLength": 200}, "box": {"enum": [4, 7, 9]}},
    "required": ["why", "box"],
}


@pytest.mark.e2e
@pytest.mark.parametrize(("scores", "box"), [((0.31, 0.74, 0.52), 7), ((0.31, 0.31, 0.31), 4), (None, 4)])
def test_a_choice_among_listed_boxes_takes_the_best_scored_when_nothing_in_view_ranks_them(
    client: openai.OpenAI, scores: tuple[float, ...] | None, box: int
) -> None:
    """Three boxes listed with a score each (or none): the best-scored is opened; with equal or no scores, the
    first listed, as before."""
    lines = [f"box {n}: {a}-{a + 10} s" + (f", score {scores[i]:.2f}" if scores else "") + ": nothing read yet"
             for i, (n, a) in enumerate(((4, 0), (7, 10), (9, 20)))]  # fmt: skip
    text = "Q: Where does the red kite fly?\nBoxes not opened yet:\n" + "\n".join(lines) + "\nPick the box to open."
    fmt = {"type": "json_schema", "json_schema": {"name": "pick", "schema": PICK}}
    got = json.loads(ask(client, messages=[user(text)], response_format=fmt).choices[0].message.content or "")
    assert got["box"] == box
