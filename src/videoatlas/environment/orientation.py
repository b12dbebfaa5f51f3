"""Display rotation: how a player turns decoded pictures before showing them (phone video).

A phone records sideways pictures and stores how to turn them: a display matrix in the stream's
side data (what FFmpeg exports today), or, in files made by older tools, a ``rotate`` stream tag.
Decoders return the pictures as stored; ffmpeg and players apply the rotation, so we do too.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import structlog

log = structlog.get_logger(__name__)


def display_rotation(stream: Any, first_frame: Any | None) -> int:
    """Counter-clockwise degrees (0, 90, 180 or 270) to turn ``stream``'s pictures for display.

    The display matrix is read from a decoded frame (decoders attach the stream's matrix to every
    frame); without one, the ``rotate`` tag, which counts clockwise.
    """
    angle = float(first_frame.rotation) if first_frame is not None else 0.0
    if angle == 0.0:
        angle = -rotate_tag_degrees(stream)
    turns = round(angle / 90)
    if abs(angle - 90 * turns) > 1:
        log.warning("rotation_not_a_quarter_turn", angle=angle, applied=90 * turns)
    return turns % 4 * 90


def rotate_tag_degrees(stream: Any) -> float:
    """The ``rotate`` tag's clockwise degrees (any letter case; Matroska stores ``ROTATE``), or 0."""
    for key, value in dict(stream.metadata).items():
        if key.lower() == "rotate":
            try:
                degrees = float(value)
            except ValueError:
                log.warning("rotate_tag_unreadable", value=value)
                return 0.0
            return degrees if math.isfinite(degrees) else 0.0
    return 0.0


def displayed_size(width: int, height: int, rotation: int) -> tuple[int, int]:
    """The size of a ``width`` x ``height`` picture once turned by ``rotation`` degrees."""
    return (height, width) if rotation % 180 else (width, height)


def upright(image: npt.NDArray[np.uint8], rotation: int) -> npt.NDArray[np.uint8]:
    """``image`` (rows first) turned ``rotation`` degrees counter-clockwise."""
    if not rotation:
        return image
    return np.ascontiguousarray(np.rot90(image, rotation // 90))
