"""Counter videos: every frame shows its own number, so a test can tell which frame it was given.

The number is drawn as 20 large black or white blocks on grey, readable at any scale. The writer
takes the codec and GOP structure to test against (B-frames, open GOPs, VP9 in Matroska) and can
store the pictures turned, with a display rotation that turns them upright again (phone video).
"""

from __future__ import annotations

import math
from pathlib import Path

import av
import numpy as np

from videoatlas.errors import BadInputError
from videoatlas.synth.encode import open_encoder
from videoatlas.synth.spec import Codec, SynthSpec

_COLS = 5


def counter_frame(index: int, width: int, height: int, bits: int = 20) -> np.ndarray:
    """A frame whose pixels encode ``index`` in binary: ``bits`` large black/white blocks on grey."""
    img = np.full((height, width, 3), 128, np.uint8)
    rows = math.ceil(bits / _COLS)
    bw, bh = width // _COLS, height // rows
    for b in range(bits):
        r, c = divmod(b, _COLS)
        value = 255 if (index >> b) & 1 else 0
        img[r * bh + bh // 6 : (r + 1) * bh - bh // 6, c * bw + bw // 6 : (c + 1) * bw - bw // 6] = value
    return img


def read_counter(image: np.ndarray, bits: int = 20) -> int:
    """Recover the index :func:`counter_frame` drew, from pixels of any scale."""
    height, width = image.shape[:2]
    rows = math.ceil(bits / _COLS)
    bw, bh = width / _COLS, height / rows
    value = 0
    for b in range(bits):
        r, c = divmod(b, _COLS)
        y, x = int((r + 0.5) * bh), int((c + 0.5) * bw)
        if float(image[y, x].mean()) > 128:
            value |= 1 << b
    return value


def write_counter_video(
    path: str | Path,
    frames: int,
    fps: float = 25.0,
    width: int = 320,
    height: int = 240,
    gop: int = 50,
    codec: Codec = "h264",
    bframes: int = 0,
    open_gop: bool = False,
    rotation: int = 0,
    rotation_tag: bool = False,
) -> Path:
    """A video whose every frame shows its own frame number (for checking which frame was decoded).

    ``width`` x ``height`` is the size as displayed. With a ``rotation`` (degrees counter-clockwise,
    a multiple of 90) the pictures are stored turned the other way, with a display matrix (or, with
    ``rotation_tag``, the older ``rotate`` stream tag) that a player applies to show them upright.
    B-frames are placed at every opportunity (see :func:`~videoatlas.synth.encoder_options`).
    """
    if rotation % 90:
        raise BadInputError(f"rotation must be a multiple of 90 degrees, got {rotation}")
    turns = rotation // 90 % 4
    coded_w, coded_h = (height, width) if turns % 2 else (width, height)
    spec = SynthSpec(
        duration=max(30.0, frames / fps),
        width=coded_w,
        height=coded_h,
        fps=fps,
        gop_s=gop / fps,
        scenecut=False,
        subtitles=False,
        crf=18,
        codec=codec,
        bframes=bframes,
        open_gop=open_gop,
    )
    p = Path(path)
    container, stream = open_encoder(p, spec, fixed_bframes=True)
    if turns and rotation_tag:
        stream.metadata["rotate"] = str(-rotation % 360)  # the tag counts clockwise
    elif turns:
        stream.set_display_rotation(rotation)
    try:
        for i in range(frames):
            # Stored turned back by the rotation, so that applying it shows the picture upright.
            picture = np.ascontiguousarray(np.rot90(counter_frame(i, width, height), -turns))
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts = i
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    finally:
        container.close()
    return p
