"""The stand-in's decision table (docs/standin.md), row by row, over real HTTP with pictures drawn here.

Each test sends what a client sends (a plain ``openai`` client, or LangChain) and checks the values a
user gets back against what the pictures show. Words, layouts and schemas are the test's own.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from typing import Any, Literal

import openai
import pytest
from PIL import Image, ImageDraw

from picture_helpers import ask, picture, user
from videoatlas.environment.render import load_font
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas_standin.version import STANDIN_MODEL

pytestmark = pytest.mark.e2e

PLATE = picture([(60, 60, "PLATE", 34), (60, 130, "KX-4471", 72)])
"""A label above its value."""
GATES = ["GATE A7", "GATE C3", "GATE B12"]
BIRDS = "Which bird is named on the sheet?\nA. KESTREL\nB. PLOVER"


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    """A client of a stand-in that gives its reasoning in a field of its own."""
    with RunningServer(StandinServer(StandinConfig(reasoning="field"), reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def sheet(cells: dict[int, str], black: tuple[int, ...] = (), k: int = 4, px: int = 320) -> str:
    """A contact sheet of k x k tiles, each labelled with its index and a clock time; ``black`` tiles blacked out.

    A tile's text may hold several lines (``\n``). A blacked-out tile keeps its label and has its text
    written over the black, as a mark would be.
    """
    img = Image.new("RGB", (k * px, k * px), (0, 0, 0))
    draw = ImageDraw.Draw(img)
    for i in range(k * k):
        x, y = (i % k) * px, (i // k) * px
        label = (0, 0, 0)
        if i in black:
            label = (255, 255, 255)
        else:
            draw.rectangle((x + 2, y + 2, x + px - 3, y + px - 3), fill=(60, 90, 60))
            draw.rectangle((x + 2, y + 2, x + 120, y + 30), fill=(255, 255, 255))
        draw.text((x + 6, y + 4), f"{i}  00:{i * 5:02d}", fill=label, font=load_font(22))
        for n, line in enumerate(cells.get(i, "").splitlines()):
            draw.text((x + 20, y + 110 + 60 * n), line, fill=(255, 255, 255), font=load_font(34))
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=92)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def reply(client: openai.OpenAI, text: str, *images: str, schema: dict[str, Any]) -> Any:
    """The JSON value the stand-in replies with under ``schema``."""
    fmt = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
    answer = ask(client, messages=[user(text, *images)], response_format=fmt)
    return json.loads(answer.choices[0].message.content or "")


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


LETTER = obj(letter={"enum": ["A", "B"]}, found={"type": "boolean"})
TILES = {"type": "array", "items": {"type": "integer", "enum": list(range(16))}}


# 1. Reading: a blacked-out tile is known by its pixels, and nothing written over it is read.


def test_a_blacked_out_tile_is_never_read(client: openai.OpenAI) -> None:
    image = sheet({5: "KESTREL", 9: "PLOVER"}, black=(5,))
    assert reply(client, BIRDS, image, schema=obj(bird={"enum": ["KESTREL", "PLOVER"]}, tiles=TILES)) == {
        "bird": "PLOVER",
        "tiles": [9],
    }
    open_question = obj(answer={"type": "string"}, found={"type": "boolean"})
    assert reply(client, "Which bird is the KESTREL?", image, schema=open_question) == {"answer": "", "found": False}


# 2. The question and its choices.


@pytest.mark.parametrize("form", ["{}. {}", "({}) {}", "{}) {}", "{}: {}"])
def test_options_in_any_common_form_are_the_choices(client: openai.OpenAI, form: str) -> None:
    options = "\n".join(form.format(letter, gate) for letter, gate in zip("ABC", GATES, strict=True))
    image = picture([(60, 120, "GATE B12", 72)])
    three = obj(letter={"enum": ["A", "B", "C"]}, found={"type": "boolean"})
    assert reply(client, f"Which gate is on the board?\n{options}", image, schema=three) == {
        "letter": "C",
        "found": True,
    }


def test_the_question_is_the_users_last_line_asking_and_the_reasoning_says_so(client: openai.OpenAI) -> None:
    messages = [
        {"role": "system", "content": "Are you ready? Read the picture."},
        user("Which gate is on the board?\nA. GATE A7\nB. GATE B12", picture([(60, 120, "GATE B12", 72)])),
    ]
    answer = ask(client, messages=messages)
    assert answer.choices[0].message.content == "GATE B12"
    thought = answer.choices[0].message.reasoning  # type: ignore[attr-defined]
    assert 'The question: "Which gate is on the board?"' in thought and "GATE B12" in thought


# 3. What was read: the request's own lines count when they report one choice.


def test_a_line_naming_one_choice_is_read_and_a_list_of_options_is_not(client: openai.OpenAI) -> None:
    asked = "Question: Which door code was logged?\nA. 1744\nB. 4471"
    assert reply(client, f"The log reads: door code 4471.\n{asked}", schema=LETTER) == {"letter": "B", "found": True}
    assert reply(client, f"Candidates are 4471 and 1744.\n{asked}", schema=LETTER) == {"letter": "A", "found": False}


def test_a_timed_line_is_read_as_a_transcript(client: openai.OpenAI) -> None:
    text = '0:12-0:15: "the night ferry leaves from pier nine"\nQuestion: Where does the night ferry leave from?'
    value = reply(client, text, schema=obj(answer={"type": "string"}, found={"type": "boolean"}))
    assert "pier nine" in value["answer"] and value["found"] is True


# 4. Multiple choice: the most supported choice; nothing read, the first listed.


def test_a_choice_read_close_to_the_question_counts_double(client: openai.OpenAI) -> None:
    image = sheet({2: "HARBOUR KIOSK\n4.50", 7: "MOUNTAIN CAFE\n3.20"})
    text = "Which price is posted at the HARBOUR kiosk?\nA. 3.20\nB. 4.50"
    assert reply(client, text, image, schema=LETTER) == {"letter": "B", "found": True}


def test_nothing_read_gives_the_first_choice_and_says_it_was_not_read(client: openai.OpenAI) -> None:
    image = picture([(60, 120, "WELCOME", 72)])
    assert reply(client, "Which gate is on the board?\nA. GATE A7\nB. GATE B12", image, schema=LETTER) == {
        "letter": "A",
        "found": False,
    }


# 5. Open questions: a labelled value, else a line that means the question, else nothing.


def test_an_open_question_gets_the_value_printed_with_its_label(client: openai.OpenAI) -> None:
    schema = obj(answer={"type": "string"}, found={"type": "boolean"})
    assert reply(client, "What is the plate number of the car in this photo?", PLATE, schema=schema) == {
        "answer": "KX-4471",
        "found": True,
    }


def test_an_open_question_nothing_answers_is_declined(client: openai.OpenAI) -> None:
    schema = obj(answer={"type": "string"}, found={"type": "boolean"}, reasoning={"type": "string"})
    assert reply(client, "What colour is the car?", PLATE, schema=schema) == {
        "answer": "",
        "found": False,
        "reasoning": "",
    }


def test_a_line_that_means_the_question_answers_it(client: openai.OpenAI) -> None:
    schema = obj(visible={"type": "boolean"})
    asked = "Is the word MANGO visible?"
    assert reply(client, asked, picture([(150, 120, "MANGO", 72)]), schema=schema) == {"visible": True}
    assert reply(client, asked, picture([(150, 120, "PAPAYA", 72)]), schema=schema) == {"visible": False}


# 6. Filling a reply schema.


def test_a_field_takes_the_value_whose_label_means_it_whatever_the_question(client: openai.OpenAI) -> None:
    board = picture([(60, 70, "DEPARTS 10:45", 56), (60, 190, "PLATFORM 4", 56)])
    schema = obj(
        departure_time={"type": "string"}, platform_number={"type": "integer"}, note={"type": ["string", "null"]}
    )
    assert reply(client, "Tell me about this board.", board, schema=schema) == {
        "departure_time": "10:45",
        "platform_number": 4,
        "note": None,
    }


def test_a_variant_is_chosen_by_its_own_description(client: openai.OpenAI) -> None:
    image = sheet({2: "HARBOUR KIOSK\n4.50"})
    text = (
        "Which price is posted at the HARBOUR kiosk?\n"
        "dim: switch the lights of the building off for the night\n"
        "quote: read out the prices a kiosk posts"
    )
    dim = obj(op={"const": "dim"})
    quote = obj(op={"const": "quote"}, tile={"enum": list(range(16))}, said={"type": "string", "maxLength": 40})
    step = reply(client, text, image, schema=obj(step={"anyOf": [dim, quote]}))["step"]
    assert (step["op"], step["tile"]) == ("quote", 2) and "4.50 [#2, 10 s]" in step["said"]  # what it read there


def test_variants_no_description_sets_apart_take_the_first_listed(client: openai.OpenAI) -> None:
    image = sheet({2: "HARBOUR KIOSK\n4.50"})
    text = (
        "Which price is posted at the HARBOUR kiosk?\n"
        "north: walk to the building on the north side\n"
        "south: walk to the building on the south side"
    )
    north, south = obj(op={"const": "north"}), obj(op={"const": "south"})
    assert reply(client, text, image, schema=obj(step={"anyOf": [north, south]}))["step"]["op"] == "north"
    assert reply(client, text, image, schema=obj(step={"anyOf": [south, north]}))["step"]["op"] == "south"


def test_a_field_with_a_default_keeps_it_when_nothing_read_names_a_member(client: openai.OpenAI) -> None:
    image = sheet({2: "HARBOUR KIOSK\n4.50"})
    text = "Which price is posted at the HARBOUR kiosk?\nplace: where the price is posted"
    schema = obj(place={"enum": ["street", "kiosk", "none"], "default": "none"})
    assert reply(client, text, image, schema=schema)["place"] == "none"
    schema = obj(place={"enum": ["street", "kiosk", "none"]})  # no default: the member the picture reads
    assert reply(client, text, image, schema=schema)["place"] == "kiosk"


def test_ids_and_objects_list_the_tiles_bearing_on_the_question_within_their_bounds(client: openai.OpenAI) -> None:
    image = sheet({2: "PLOVER", 9: "PLOVER", 13: "KESTREL"})
    schema = obj(
        bird={"enum": ["KESTREL", "PLOVER"]},
        tiles=TILES | {"minItems": 4, "maxItems": 4},
        seen={"type": "array", "items": obj(tile={"enum": list(range(16))}, what={"type": "string"}), "maxItems": 2},
    )
    value = reply(client, BIRDS, image, schema=schema)
    assert value["bird"] == "PLOVER"
    assert value["tiles"] == [2, 9, 13, 0]  # the answer's tiles, the other choice's, then padding
    assert [(item["tile"], item["what"].split(" [")[0]) for item in value["seen"]] == [(2, "PLOVER"), (9, "PLOVER")]


# Clients: LangChain's structured output gets what the picture shows.


def test_langchain_structured_output_gets_the_choice_and_the_value_read(client: openai.OpenAI) -> None:
    from langchain_openai import ChatOpenAI
    from pydantic import BaseModel, SecretStr

    class Pick(BaseModel):
        answer: Literal["GATE A7", "GATE B12"]
        found: bool

    class Plate(BaseModel):
        plate: str

    model = ChatOpenAI(base_url=str(client.base_url), api_key=SecretStr("none"), model=STANDIN_MODEL, max_retries=0)
    board = picture([(60, 120, "GATE B12", 72)])
    pick = model.with_structured_output(Pick).invoke(
        [user("Which gate is on the board?\nA. GATE A7\nB. GATE B12", board)]
    )
    assert pick == Pick(answer="GATE B12", found=True)
    assert model.with_structured_output(Plate).invoke([user("Read the photo.", PLATE)]) == Plate(plate="KX-4471")
