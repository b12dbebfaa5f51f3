"""Lines of a request's text labelled with the ids of a picture's grid cells (:mod:`videoatlas_standin.said`)."""

from __future__ import annotations

import pytest

from videoatlas_standin.perception import Tile
from videoatlas_standin.said import said_by_cell

pytestmark = pytest.mark.unit

GRID = [Tile(i, None, float(i), 0, 0) for i in range(16)]
"""A 4 x 4 grid's cells, ids 0-15."""


def test_a_labelled_line_or_range_is_what_was_reported_of_those_cells() -> None:
    text = "\n".join(
        [
            "Heard per tile:",
            "tile 5: the ferry is painted orange this season",
            "tiles 7 to 8: mind the gap",
            "10-11: doors closing",
            "[13] last call",
        ]
    )
    assert said_by_cell(text, GRID) == {
        5: "the ferry is painted orange this season",
        7: "mind the gap",
        8: "mind the gap",
        10: "doors closing",
        11: "doors closing",
        13: "last call",
    }


def test_times_spans_choices_and_ids_the_picture_lacks_are_not_reports() -> None:
    text = "\n".join(
        [
            "3: 00:15.0-00:20.0",  # a cell's time span: nothing said
            "4: 00:20.0-00:25.0 [explored]",  # and a mark on the cell
            "00:30.0-00:38.9: the ferry is orange",  # a time label, not a cell id
            "2: orange",  # an answer choice numbered 2
            "tile 40: out of the grid",
            "tiles 9 to 2: backwards",
            "Step 4 of 6: planning",
        ]
    )
    assert said_by_cell(text, GRID, skip=["orange", "green"]) == {}
