"""How the stand-in pairs a picture's text into labels and values, as signs, forms and boards print them."""

from __future__ import annotations

import pytest

from videoatlas_standin.labels import Labelled, labelled, split_pair
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
