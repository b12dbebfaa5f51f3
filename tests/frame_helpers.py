"""Checks on decoded frames of counter videos, whose pixels say which frame they are."""

from __future__ import annotations

import pytest

from conftest import COUNTER_FPS
from videoatlas.environment.geometry import Interval
from videoatlas.environment.video import DecodedFrame
from videoatlas.synth.counter import read_counter

FRAME_DT = 1 / COUNTER_FPS


def frame_number(frame: DecodedFrame) -> int:
    """The frame number drawn in the frame's pixels."""
    assert frame.image is not None
    return read_counter(frame.image)


def assert_honest(frame: DecodedFrame, window: Interval) -> None:
    """The pixels say which frame this is; that frame must be on screen during ``window``."""
    shown_at = frame_number(frame) * FRAME_DT
    # decord reports float32 times: allow 0.1 ms, far below the 40 ms between frames.
    assert shown_at == pytest.approx(frame.time, abs=1e-4), "reported time disagrees with the pixels"
    if frame.method == "keyframe":
        assert window.start <= shown_at < window.end
    else:
        # The exact frame on screen at the window's midpoint: it starts at or before the midpoint
        # and is still on screen when the window begins.
        assert shown_at <= window.mid + 1e-9
        assert shown_at + FRAME_DT > window.start
