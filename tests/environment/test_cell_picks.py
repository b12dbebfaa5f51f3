"""Cell picks: a cell may show another frame of its own interval, and carry a relevance mark.

The counter video's pixels say which frame they are, so what a cell shows is read back from the
rendered picture's own frame record and checked against the cell's interval.
"""

from __future__ import annotations

import io
import math
import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from frame_helpers import FRAME_DT
from videoatlas.environment.atlas import CellPick, VideoAtlas
from videoatlas.environment.frames import FrameSource
from videoatlas.environment.geometry import Interval
from videoatlas.errors import BadInputError
from videoatlas.synth.counter import read_counter

pytestmark = pytest.mark.e2e
PX = 128
K = 4


@pytest.fixture
def atlas(counter_video: Path) -> Iterator[VideoAtlas]:
    src = FrameSource(counter_video)
    yield VideoAtlas(src, k=K, cell_px=PX)
    src.close()


def cell_pixels(jpeg: bytes, index: int) -> np.ndarray:
    img = np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"))
    row, col = divmod(index, K)
    return img[row * PX : (row + 1) * PX, col * PX : (col + 1) * PX]


def test_a_picked_frame_lies_inside_its_cell_and_the_geometry_is_unchanged(atlas: VideoAtlas) -> None:
    plain = atlas.grid((1,))
    rng = random.Random(7)
    picks = {}
    for cell in plain.grid.cells[::3]:  # a frame that starts inside the cell: picked as asked
        first, last = math.ceil(cell.interval.start / FRAME_DT), math.ceil(cell.interval.end / FRAME_DT) - 1
        picks[cell.index] = CellPick(time=rng.randint(first, last) * FRAME_DT, score=rng.random())
    early = plain.grid.cells[4].interval.start + 1e-4  # on screen then: a frame that began before the cell
    assert (early / FRAME_DT) % 1 > 1e-3
    picks[4] = CellPick(time=early, score=0.25)
    picks[1] = CellPick(score=0.5)  # a mark with the fixed frame
    picked = atlas.grid((1,), picks=picks)

    assert [c.interval for c in picked.grid.cells] == [c.interval for c in plain.grid.cells]
    assert picked.grid.path == plain.grid.path and picked.image.sha256 != plain.image.sha256
    for cell, shown, fixed in zip(picked.grid.cells, picked.image.frames, plain.image.frames, strict=True):
        pick = picks.get(cell.index)
        if pick is None or pick.time is None or cell.index == 4:
            assert shown["time"] == fixed["time"] and "picked" not in shown
            assert ("pick_dropped" in shown) == (cell.index == 4)
            continue
        assert shown["picked"] is True
        assert cell.interval.start <= shown["time"] < cell.interval.end
        assert abs(shown["time"] - pick.time) <= FRAME_DT  # the frame on screen at the picked time


def test_a_picked_cell_shows_the_picked_frame_and_a_second_label_line(counter_video: Path) -> None:
    src = FrameSource(counter_video)
    try:
        atlas = VideoAtlas(src, k=K, cell_px=PX)
        plain = atlas.grid(())
        cell = plain.grid.cells[5].interval
        late = (math.ceil(cell.end / FRAME_DT) - 3) * FRAME_DT
        picked = atlas.grid((), picks={5: CellPick(time=late, score=0.83)})
        shown = src.frames_at([picked.image.frames[5]["time"]], PX)[0]
        assert shown.image is not None and read_counter(shown.image) * FRAME_DT == pytest.approx(late, abs=FRAME_DT)
        # The second label line sits under the first: the plain grid has picture there, the picked one a label.
        band = slice(PX // 8 + 4, PX // 8 + 14)
        before, after = cell_pixels(plain.image.jpeg, 5)[band, 2:40], cell_pixels(picked.image.jpeg, 5)[band, 2:40]
        assert np.abs(before.astype(int) - after.astype(int)).mean() > 10
        # Other cells are untouched.
        assert np.abs(cell_pixels(plain.image.jpeg, 0).astype(int) - cell_pixels(picked.image.jpeg, 0)).mean() < 3
    finally:
        src.close()


def test_dead_zones_stay_black_under_a_pick(atlas: VideoAtlas) -> None:
    root = atlas.grid(())
    dead = [root.grid.cells[2].interval]
    picks = {2: CellPick(time=root.grid.cells[2].interval.mid, score=0.9)}
    plain, picked = atlas.grid((), dead), atlas.grid((), dead, picks)
    assert np.array_equal(cell_pixels(plain.image.jpeg, 2), cell_pixels(picked.image.jpeg, 2))


def test_a_pick_outside_its_cell_or_grid_is_refused(atlas: VideoAtlas) -> None:
    cells = atlas.grid(()).grid.cells
    with pytest.raises(BadInputError, match="not inside cell 3"):
        atlas.grid((), picks={3: CellPick(time=cells[4].interval.start)})
    with pytest.raises(BadInputError, match="no cell 16"):
        atlas.grid((), picks={16: CellPick(score=0.1)})
    with pytest.raises(BadInputError, match=r"not in \[0, 1\]"):
        atlas.grid((), picks={0: CellPick(score=1.5)})
    with pytest.raises(BadInputError, match="not inside cell 0"):
        atlas.grid_over(Interval(2.0, 6.0), picks={0: CellPick(time=1.0)})


def test_the_note_says_which_frame_and_how_relevant() -> None:
    assert CellPick(time=75.25, score=0.834).note(1) == "@01:15.2 rel 83"
    assert CellPick(score=1.0).note(0) == "rel 99"
    assert CellPick(time=3600.0).note(0) == "@1:00:00"
