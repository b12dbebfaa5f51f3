"""A frame's id and time burned in on a black plate over the picture's own heading are read apart from it.

Read together, the label and the heading made one line that was neither, and the frame had no id or time.
The words and heading here are the test's own; the label is burned in by the atlas's own renderer.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from videoatlas.environment.render import load_font, render_zoom
from videoatlas.environment.timefmt import format_ts
from videoatlas.environment.video import DecodedFrame
from videoatlas_standin.perception import Reader

START_S = 131.0


def frame(i: int, sign: str, heading: bool = True) -> Image.Image:
    """Frame ``i`` (one second apart): a sign on a dark quay, a heading band on top, its id and time on a plate."""
    img = Image.new("RGB", (640, 360), (24, 40, 88))
    draw = ImageDraw.Draw(img)
    if heading:
        draw.rectangle((0, 0, 640, 44), fill=(34, 34, 40))
        draw.text((18, 10), "HARBOUR WATCH", fill=(240, 240, 240), font=load_font(26))
    draw.text((200, 170), sign, fill=(250, 250, 250), font=load_font(40))
    t = START_S + i
    return render_zoom(DecodedFrame(t, np.asarray(img), "exact"), f"{i}  {format_ts(t, 2)}")


@pytest.mark.unit
def test_a_label_on_a_plate_over_a_heading_is_read_apart_from_it() -> None:
    sight = Reader().see(np.asarray(frame(3, "CORMORANT")))
    assert len(sight.tiles) == 1
    tile = sight.tiles[0]
    assert (tile.cell, tile.time) == (3, START_S + 3)
    assert "CORMORANT" in tile.text
    assert "WATCH" in tile.text  # the heading is still read, beside the label
