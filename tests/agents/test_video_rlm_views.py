"""How the Master's prompts list a grid's cells: by start time, each lasting until the next starts."""

from __future__ import annotations

import pytest

from videoatlas.agents.video_rlm.nodes.views import cells_block
from videoatlas.environment.geometry import Interval, grid_for_path
from videoatlas.environment.timefmt import parse_time

pytestmark = pytest.mark.unit


def test_a_cell_is_listed_by_its_start_and_ends_where_the_next_one_starts() -> None:
    grid = grid_for_path(120.0, (), 4)  # cells of 7.5 s
    dead = [Interval(0.0, 15.0), Interval(30.0, 33.75)]  # cells 0 and 1 whole; half of cell 4
    lines = cells_block(grid, dead).splitlines()
    assert lines[:6] == [
        "0: 00:00.0 [explored]",
        "1: 00:07.5 [explored]",
        "2: 00:15.0",
        "3: 00:22.5",
        "4: 00:30.0 [50% explored]",
        "5: 00:37.5",
    ]
    starts = [parse_time(line.split(": ", 1)[1].split(" ")[0]) for line in lines]
    # What the prompt leaves out is what the grid holds: each cell ends where the next one starts.
    assert starts == [c.interval.start for c in grid.cells]
    assert [c.interval.end for c in grid.cells] == [*starts[1:], 120.0]
