"""How the stand-in reads a request's words and a picture's text: label and value pairs, budgets, positions, numbers."""

from __future__ import annotations

import pytest

from videoatlas_standin.labels import Labelled, labelled, split_pair
from videoatlas_standin.language import budget_left, image_position, index_base, steps_left
from videoatlas_standin.perception import TextLine, Tile

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("segment", "pair"),
    [
        ("ROOM 512", ("ROOM", "512")),
        ("PLATE KX-4471", ("PLATE", "KX-4471")),
        ("FLIGHT BA 2290", ("FLIGHT", "BA 2290")),
        ("TICKET NO 58213", ("TICKET NO", "58213")),
        ("TICKET NO: 58213", ("TICKET NO", "58213")),
        ("Name: Ada Lovelace", ("Name", "Ada Lovelace")),
        ("Departs 10:45", ("Departs", "10:45")),
        ("CENTRAL STATION", None),
        ("12:30", None),
        ("4471 KX", None),
    ],
)
def test_a_line_splits_into_its_label_and_value(segment: str, pair: tuple[str, str] | None) -> None:
    assert split_pair(segment) == pair


def line(text: str, x: int, y: int, h: int = 30) -> TextLine:
    return TextLine(text, 0.9, x, y, len(text) * h // 2, h)


def test_a_tile_pairs_labels_on_a_line_across_separators_and_above_their_values() -> None:
    tile = Tile(
        None,
        None,
        None,
        0,
        0,
        [line("GATE 17 / FLIGHT BA 2290", 20, 10), line("PLATE", 20, 80, 24), line("KX-4471", 20, 110, 60)],
        image=1,
    )
    assert labelled(tile) == [
        Labelled("GATE", "17", 1),
        Labelled("FLIGHT", "BA 2290", 1),
        Labelled("PLATE", "KX-4471", 1),
    ]
    far = Tile(None, None, None, 0, 0, [line("PLATE", 20, 10), line("KX-4471", 20, 300)])
    assert labelled(far) == []  # a value far below is not the label's


@pytest.mark.parametrize(
    ("text", "left"),
    [
        ("This is step 2 of 10; answer at step 10.", True),
        ("This is step 10 of 10.", False),
        ("Turn 3/3.", False),
        ("You have 2 calls left.", True),
        ("0 steps remaining.", False),
        ("No budget is stated.", True),
    ],
)
def test_the_budget_a_request_states(text: str, left: bool) -> None:
    assert budget_left(text) is left


@pytest.mark.parametrize(
    ("text", "left"),
    [
        ("This is step 2 of 10; answer at step 10.", 8),
        ("This is step 10 of 10.", 0),
        ("Turn 3/3.", 0),
        ("You have 2 calls left.", 2),
        ("No budget is stated.", None),
    ],
)
def test_how_many_steps_a_request_leaves(text: str, left: int | None) -> None:
    assert steps_left(text) == left


@pytest.mark.parametrize(
    ("question", "images", "at"),
    [
        ("What does the second image show?", 3, 1),
        ("Read the last frame.", 4, 3),
        ("Which room is in image 2?", 2, 1),
        ("What is in the third picture?", 2, None),
        ("What does the second image show?", 1, None),
        ("Which comes first in the video?", 3, None),
    ],
)
def test_a_picture_named_by_its_position(question: str, images: int, at: int | None) -> None:
    assert image_position(question, images) == at


@pytest.mark.parametrize(
    ("text", "base"),
    [
        ("Reply with the index of the correct option.", 0),
        ("Reply with the index of the correct option (1-based).", 1),
        ("Answer with the number of the correct choice.", 1),
        ("Options:\n3) a\n4) b\nAnswer with the option number.", 3),
        ("Answer with the letter of the correct option.", None),
    ],
)
def test_the_number_a_choice_is_asked_for_by(text: str, base: int | None) -> None:
    assert index_base(text) == base
