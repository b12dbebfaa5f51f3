"""The stand-in VLM answers plain OpenAI-style requests of many shapes from what the images show.

None of these requests looks like the agent's: other words, other layouts, other schemas. Each
answer is checked against what the pictures (drawn here) actually show.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from PIL import Image, ImageDraw

from videoatlas.environment.render import load_font
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas_standin.version import STANDIN_MODEL

pytestmark = pytest.mark.e2e

Box = tuple[int, int, str, int]
"""x, y, text, pixel size."""


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield server.base_url


def picture(texts: list[Box], size: tuple[int, int] = (640, 320), bg: tuple[int, int, int] = (20, 40, 120)) -> str:
    """A JPEG data URL of white text on a flat background."""
    img = Image.new("RGB", size, bg)
    draw = ImageDraw.Draw(img)
    for x, y, text, px in texts:
        draw.text((x, y), text, fill=(255, 255, 255), font=load_font(px))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=92)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def sheet(cells: dict[int, str], k: int = 4, px: int = 240) -> str:
    """A contact sheet: k x k tiles labelled with an index and a clock time, some with a word."""
    img = Image.new("RGB", (k * px, k * px), (0, 0, 0))
    draw = ImageDraw.Draw(img)
    for i in range(k * k):
        x, y = (i % k) * px, (i // k) * px
        draw.rectangle((x + 2, y + 2, x + px - 3, y + px - 3), fill=(60, 90, 60))
        draw.rectangle((x + 2, y + 2, x + 120, y + 30), fill=(255, 255, 255))
        draw.text((x + 6, y + 4), f"{i}  00:{i * 5:02d}", fill=(0, 0, 0), font=load_font(22))
        if i in cells:
            draw.text((x + 30, y + 110), cells[i], fill=(255, 255, 255), font=load_font(40))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=92)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def ask(url: str, text: str, images: list[str] = (), schema: dict[str, Any] | None = None) -> Any:  # type: ignore[assignment]
    content: list[dict[str, Any]] = [{"type": "image_url", "image_url": {"url": u}} for u in images]
    content.append({"type": "text", "text": text})
    body: dict[str, Any] = {"model": STANDIN_MODEL, "messages": [{"role": "user", "content": content}]}
    if schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
    reply = httpx.post(f"{url}/chat/completions", json=body, timeout=120)
    assert reply.status_code == 200, reply.text
    message = reply.json()["choices"][0]["message"]["content"]
    return json.loads(message) if schema is not None else message


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


TEXT = {"type": "string"}


def test_one_image_and_a_flat_enum(url: str) -> None:
    options = ["WALRUS 1234", "WALRUS 4417", "PENGUIN 4417"]
    image = picture([(60, 110, "WALRUS 4417", 80)])
    reply = ask(
        url, f"Which label is shown? Options: {', '.join(options)}", [image], obj(answer={"enum": options}, reason=TEXT)
    )
    assert reply["answer"] == "WALRUS 4417"
    assert "WALRUS 4417" in reply["reason"]


def test_several_images_and_an_image_index(url: str) -> None:
    images = [picture([(80, 120, "HERON 22", 64)]), picture([(80, 120, "FALCON 57", 64)])]
    schema = obj(image={"type": "integer", "minimum": 0, "maximum": 1})
    assert ask(url, "In which of the two pictures is FALCON written?", images, schema) == {"image": 1}
    assert ask(url, "In which of the two pictures is HERON written?", images, schema) == {"image": 0}


def test_text_only_request_answers_from_the_text_and_says_there_is_no_image(url: str) -> None:
    text = "The operator wrote down the door code 4471 at noon.\nQuestion: Which door code was written down?"
    text += "\nA. 1744\nB. 4471"
    reply = ask(url, text, [], obj(answer={"type": "integer", "minimum": 0, "maximum": 1}, explanation=TEXT))
    assert reply["answer"] == 1
    assert "no image" in reply["explanation"]


def test_nested_objects(url: str) -> None:
    image = picture([(100, 120, "OTTER 31", 72)])
    schema = obj(
        result=obj(label={"enum": ["OTTER 13", "OTTER 31"]}, confidence={"type": "number", "minimum": 0, "maximum": 1}),
        seen=obj(text=TEXT),
    )
    reply = ask(url, "What does the sign read: OTTER 13 or OTTER 31?\nA. OTTER 13\nB. OTTER 31", [image], schema)
    assert reply["result"]["label"] == "OTTER 31" and reply["result"]["confidence"] >= 0.5
    assert "OTTER 31" in reply["seen"]["text"]


def test_an_array_of_items_lists_every_line_read(url: str) -> None:
    image = picture([(40, 30, "NORTH", 48), (330, 130, "EAST GATE", 48), (60, 230, "PIER 9", 48)])
    schema = obj(signs={"type": "array", "items": obj(text=TEXT)})
    reply = ask(url, "List every sign you can read in this picture.", [image], schema)
    read = " | ".join(item["text"].replace(" ", "") for item in reply["signs"])
    assert len(reply["signs"]) == 3 and all(word in read for word in ("NORTH", "EASTGATE", "PIER9"))


def test_an_integer_count_in_one_picture(url: str) -> None:
    image = picture([(20, 20, "LOTUS", 44), (350, 40, "LOTUS", 44), (200, 220, "LOTUS", 44), (420, 230, "IRIS", 44)])
    reply = ask(
        url, "How many LOTUS stickers are in this picture?", [image], obj(count={"type": "integer", "minimum": 0})
    )
    assert reply == {"count": 3}


def test_free_text_without_a_schema(url: str) -> None:
    image = picture([(40, 120, "HARBOR LIGHTS", 64)])
    reply = ask(url, "What is written on the sign?", [image])
    assert isinstance(reply, str) and "HARBOR LIGHTS" in reply


def test_a_boolean_follows_the_pixels(url: str) -> None:
    schema = obj(visible={"type": "boolean"})
    assert ask(url, "Is the word MANGO visible?", [picture([(150, 120, "MANGO", 72)])], schema) == {"visible": True}
    assert ask(url, "Is the word MANGO visible?", [picture([(150, 120, "PAPAYA", 72)])], schema) == {"visible": False}


def test_a_cell_of_a_contact_sheet(url: str) -> None:
    image = sheet({6: "KESTREL", 11: "PLOVER"})
    schema = obj(cell={"type": "integer", "minimum": 0, "maximum": 15})
    assert ask(url, "Which cell of the sheet shows KESTREL?", [image], schema) == {"cell": 6}
    assert ask(url, "Which cell of the sheet shows PLOVER?", [image], schema) == {"cell": 11}


def test_cells_that_show_something_as_an_array_of_ids(url: str) -> None:
    image = sheet({2: "PLOVER", 9: "PLOVER", 13: "KESTREL"})
    schema = obj(cells={"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 15}, "maxItems": 4})
    reply = ask(url, "Which cells show PLOVER?", [image], schema)
    assert reply["cells"][:2] == [2, 9] and 13 not in reply["cells"][:2]


def test_a_lettered_choice_as_an_integer_index(url: str) -> None:
    image = picture([(60, 120, "GATE B12", 72)])
    text = "Which gate is on the board?\n(A) GATE A7\n(B) GATE C3\n(C) GATE B12"
    assert ask(url, text, [image], obj(choice={"type": "integer", "minimum": 0, "maximum": 2})) == {"choice": 2}


def test_which_comes_first_across_timed_pictures(url: str) -> None:
    first = picture([(10, 10, "00:10", 28), (150, 130, "CEDAR", 64)])
    later = picture([(10, 10, "00:40", 28), (150, 130, "MAPLE", 64)])
    schema = obj(answer={"enum": ["MAPLE", "CEDAR"]})
    question = "Which name appears first? Options: MAPLE, CEDAR"
    assert ask(url, question, [later, first], schema) == {"answer": "CEDAR"}
    assert ask(url, question.replace("first", "last"), [later, first], schema) == {"answer": "MAPLE"}


def test_text_too_small_to_read_is_said_so(url: str) -> None:
    image = picture([(300, 160, "ZEBRA 12 ON THE POST", 7)])
    reply = ask(
        url,
        "What does the small label say? Options: ZEBRA 12, ZEBRA 21",
        [image],
        obj(answer={"enum": ["ZEBRA 12", "ZEBRA 21"]}, notes=TEXT),
    )
    assert "too small" in reply["notes"]


def test_text_on_a_dark_picture_is_read(url: str) -> None:
    image = picture([(60, 110, "WALRUS 4417", 80)], bg=(12, 12, 12))
    options = ["WALRUS 1234", "WALRUS 4417"]
    reply = ask(url, f"Which label is shown? Options: {', '.join(options)}", [image], obj(answer={"enum": options}))
    assert reply == {"answer": "WALRUS 4417"}


def test_answers_that_look_like_actions_are_answers(url: str) -> None:
    image = picture([(200, 110, "ENTER", 80)])
    schema = obj(answer={"enum": ["STOP", "EXIT", "ENTER"]})
    assert ask(url, "Which word is on the door sign? Options: STOP, EXIT, ENTER", [image], schema) == {
        "answer": "ENTER"
    }


def test_options_lettered_inline_and_a_letter_as_the_answer(url: str) -> None:
    first = picture([(10, 10, "00:05", 28), (150, 130, "ORCHID", 64)])
    later = picture([(10, 10, "01:15", 28), (150, 130, "TULIP", 64)])
    schema = obj(letter={"enum": ["A", "B", "C"]})
    text = "Which flower name appears last? (a) ORCHID (b) TULIP (c) DAISY"
    assert ask(url, text, [first, later], schema) == {"letter": "B"}


def test_array_bounds_are_kept(url: str) -> None:
    image = picture([(40, 120, "HELLO", 64)])
    schema = obj(
        words={"type": "array", "items": {"type": "string", "maxLength": 3}, "minItems": 2},
        ratio={"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    )
    reply = ask(url, "Read the picture.", [image], schema)
    assert len(reply["words"]) >= 2
    assert all(len(w) <= 3 for w in reply["words"]) and 0 < reply["ratio"] < 1


@pytest.mark.parametrize(
    ("backend", "message"),
    [
        # vLLM 0.33's words, status and error body for each backend (auto falls back to guidance,
        # whose llguidance refuses the keyword).
        ("auto", 'Grammar error: Unimplemented keys: ["uniqueItems"]'),
        ("guidance", 'Grammar error: Unimplemented keys: ["uniqueItems"]'),
        ("xgrammar", "The provided JSON schema contains features not supported by xgrammar."),
    ],
)
def test_a_schema_with_unique_items_is_refused_as_vllm_refuses_it(backend: str, message: str) -> None:
    schema = obj(words={"type": "array", "items": {"type": "string"}, "uniqueItems": True})
    body = {
        "model": STANDIN_MODEL,
        "messages": [{"role": "user", "content": "List two words."}],
        "max_completion_tokens": 64,
        "response_format": {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}},
    }
    config = StandinConfig(structured_outputs_backend=backend)  # type: ignore[arg-type]
    with RunningServer(StandinServer(config, reader=Reader())) as server:
        reply = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=60)
        stats = httpx.get(f"{server.base_url.removesuffix('/v1')}/stats", timeout=10).json()
    assert reply.status_code == 400
    assert reply.json() == {"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}}
    assert stats["completed"] == 0


def test_an_id_from_an_enum_of_allowed_cells(url: str) -> None:
    image = sheet({6: "KESTREL", 11: "KESTREL", 2: "PLOVER"})
    schema = obj(cell={"type": "integer", "enum": [3, 11, 12]})  # cell 6 is not on offer
    assert ask(url, "Which cell of the sheet shows KESTREL?", [image], schema) == {"cell": 11}


def test_a_union_of_tool_calls_picks_the_tool_and_fills_only_its_fields(url: str) -> None:
    text = (
        "Question: Which tile shows PLOVER?\nTools:\n"
        "save: keep a tile that answers the question (give its tile number)\n"
        "skip: nothing on this sheet answers it"
    )
    save = obj(tool={"const": "save", "type": "string"}, tile={"type": "integer", "enum": list(range(16))})
    skip = obj(tool={"const": "skip", "type": "string"})
    schema = obj(call={"anyOf": [save, skip]})
    assert ask(url, text, [sheet({9: "PLOVER", 4: "KESTREL"})], schema) == {"call": {"tool": "save", "tile": 9}}
    assert ask(url, text, [sheet({4: "KESTREL"})], schema) == {"call": {"tool": "skip"}}


def tagged(frames: list[tuple[str, str, str]], px: int = 240) -> str:
    """A JPEG data URL of frames in a row, each tagged ``[A] 00:10`` and showing its word (if any)."""
    img = Image.new("RGB", (px * len(frames), px), (0, 0, 0))
    draw = ImageDraw.Draw(img)
    for i, (tag, clock, word) in enumerate(frames):
        x = i * px
        draw.rectangle((x + 2, 2, x + px - 3, px - 3), fill=(60, 60, 90))
        draw.rectangle((x + 2, 2, x + 130, 34), fill=(0, 0, 0))  # the tag on a black plate, as frames are labelled
        draw.text((x + 6, 6), f"[{tag}] {clock}", fill=(255, 255, 255), font=load_font(22))
        draw.text((x + 20, 110), word, fill=(255, 255, 255), font=load_font(34))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=92)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def test_cited_labels_come_from_the_enum_offered(url: str) -> None:
    """Tiles tagged [A], [B], [C] with times; the answer cites the tiles that show it, among the labels offered."""
    image = tagged([("A", "00:10", "HERON 22"), ("B", "00:11", "FALCON 57"), ("C", "00:12", "FALCON 57")])
    schema = obj(
        answer={"enum": ["HERON 22", "FALCON 57"]},
        cited={"type": "array", "items": {"type": "string", "enum": ["A", "B"]}, "maxItems": 2},
    )
    reply = ask(url, "Which bird tag is shown most? Options: HERON 22, FALCON 57", [image], schema)
    assert reply == {"answer": "FALCON 57", "cited": ["B"]}  # C shows it too, but only A and B may be cited


def test_tagged_frames_of_one_stay_on_screen_count_once(url: str) -> None:
    """Frames in time order: KITE at 01:50, 01:58 and 02:05 with nothing between, again at 04:20: two times.

    A frame without it between two sightings keeps them apart; a set of frames that all show it is a
    selection that says nothing of what lay between, so each of its moments counts.
    """
    asked = "Question: How many times does the KITE appear in the video? Give the number."
    count = obj(count={"type": "integer", "minimum": 0})
    strip = [("A", "01:40", "PIER"), ("B", "01:50", "KITE"), ("C", "01:58", "KITE"), ("D", "02:05", "KITE")]
    later = [("E", "03:00", "PIER"), ("F", "04:20", "KITE"), ("G", "04:30", "PIER")]
    assert ask(url, asked, [tagged(strip), tagged(later)], count) == {"count": 2}
    broken = [("A", "01:50", "KITE"), ("B", "01:54", "PIER"), ("C", "01:58", "KITE"), ("D", "03:00", "PIER")]
    assert ask(url, asked, [tagged(broken)], count) == {"count": 2}
    far = [("A", "01:00", "PIER"), ("B", "01:50", "KITE"), ("C", "02:40", "KITE")]  # 50 s: not seconds apart
    assert ask(url, asked, [tagged(far)], count) == {"count": 2}
    selected = [("A", "01:50", "KITE"), ("B", "01:58", "KITE")]
    assert ask(url, asked, [tagged(selected)], count) == {"count": 2}


def _planning_schema() -> dict[str, Any]:
    seconds = {"type": "number", "minimum": 0, "maximum": 3600}
    sweep = obj(op={"const": "sweep", "type": "string"})
    magnify = obj(op={"const": "magnify", "type": "string"}, start=seconds, end=seconds)
    done = obj(op={"const": "done", "type": "string"})
    return obj(next={"anyOf": [sweep, magnify, done]})


PLANNING = (
    "A camera log of a parking garage, one hour long.\n"
    "Question: Which plate belongs to the car parked under the EXIT sign?\n"
    "Options: KL-204, MR-771\n"
    "Moves:\n"
    "sweep: scan the whole hour at a glance\n"
    "magnify: enlarge a stretch of at most 6 seconds to full resolution\n"
    "done: nothing more to do, give the answer\n"
    "Notes so far:\n"
)


def test_a_text_only_planner_looks_broadly_then_closely_then_stops(url: str) -> None:
    """No picture: the next move comes from the notes: a broad look, a close look where the subject was noted, stop."""
    schema = _planning_schema()
    assert ask(url, PLANNING + "(none)", [], schema) == {"next": {"op": "sweep"}}
    notes = "10:00 a ramp, no sign\n20:00 the EXIT sign over a grey car, plate too small to read\n30:00 stairs\n"
    closer = ask(url, PLANNING + notes, [], schema)["next"]
    assert closer["op"] == "magnify" and closer["start"] <= 1200.0 <= closer["end"]
    assert closer["end"] - closer["start"] <= 6  # the bound the move's description states
    settled = notes + "20:01 close up: the EXIT sign over a grey car with plate MR-771\n"
    assert ask(url, PLANNING + settled, [], schema) == {"next": {"op": "done"}}


def test_one_object_per_option_names_each_option_once(url: str) -> None:
    # Numeric option texts: an enum of integers still holds indices (option "3" is not index 3).
    image = picture([(60, 120, "5 LAPS", 72)])
    text = "How many laps are on the board?\n(A) 3\n(B) 4\n(C) 5\n(D) 2\nRate every option."
    rating = obj(option={"enum": [0, 1, 2, 3]}, rating={"enum": ["yes", "no", "unknown"]})
    schema = obj(ratings={"type": "array", "items": rating, "maxItems": 4}, pick={"type": "integer", "minimum": 0})
    reply = ask(url, text, [image], schema)
    assert [r["option"] for r in reply["ratings"]] == [0, 1, 2, 3]


HEARD = (
    "Question: What colour does the guide say the ferry is painted?\n"
    "Choices: (A) green (B) orange (C) blue (D) white\n"
    "Heard per tile:\n"
    "tile 5: the ferry is painted orange this season\n"
    "tiles 9 to 10: mind the gap between the boat and the pier"
)
"""A question about what is said, with what was heard during some tiles of a sheet that shows none of it."""


TOOLS = (
    "\nTools:\nsave: keep a tile that answers the question (give its tile number and describe it)\n"
    "skip: nothing on this sheet answers it"
)
SAVE_OR_SKIP = obj(
    call={
        "anyOf": [
            obj(
                tool={"const": "save", "type": "string"},
                tile={"type": "integer", "enum": list(range(16))},
                description=TEXT,
            ),
            obj(tool={"const": "skip", "type": "string"}),
        ]
    }
)


def test_what_the_text_says_was_said_during_a_cell_answers_a_question_about_what_is_said(url: str) -> None:
    image = sheet({1: "PIER", 5: "PIER", 12: "KIOSK"})
    cells = obj(cells={"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 15}, "maxItems": 2})
    assert ask(url, HEARD, [image], cells)["cells"][0] == 5
    call = ask(url, HEARD + TOOLS, [image], SAVE_OR_SKIP)["call"]
    assert call["tool"] == "save" and call["tile"] == 5, call
    assert "painted orange" in call["description"]


def test_what_was_said_during_a_cell_is_not_what_the_cell_shows(url: str) -> None:
    shown = HEARD.replace("does the guide say the ferry is painted?", "is the ferry painted on the sign?")
    call = ask(url, shown + TOOLS, [sheet({1: "PIER", 5: "PIER", 12: "KIOSK"})], SAVE_OR_SKIP)["call"]
    assert call == {"tool": "skip"}  # no tile shows a colour


def test_what_was_said_over_a_run_of_cells_is_filed_once_and_then_known_to_be_filed(url: str) -> None:
    """A report naming "panel 10" is no list of options, though its letters and digits run together read "110"."""
    question = (
        "Question: Which room does the guide say the meeting is in?\n"
        "Choices: (A) 110 (B) 400 (C) 410 (D) 440\n"
        "Heard per panel:\npanels 10 to 12: the meeting is in room 400\n"
        "Already kept:\n"
        '- @50.0 s (panel 10, kept by you): panel 10 shows PIER; said there: "the meeting is in room 400"\n'
        "Moves:\nKEEP: keep tiles that answer the question, never one already kept\nDONE: nothing more here answers it"
    )
    item = obj(tile={"type": "integer", "enum": [i for i in range(16) if i != 10]}, description=TEXT)
    keep = obj(move={"const": "KEEP", "type": "string"}, tiles={"type": "array", "items": item, "minItems": 1})
    schema = obj(step={"anyOf": [keep, obj(move={"const": "DONE", "type": "string"})]})
    assert ask(url, question, [sheet({10: "PIER", 11: "PIER"})], schema)["step"] == {"move": "DONE"}
