"""Frame access on files as they come from cameras and encoders, not from our own synthesizer.

B-frames with open GOPs (H.264 and HEVC), files cut short, and phone video with a display rotation,
each made as a counter video so that the pixels say which frame was returned.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import COUNTER_FPS, COUNTER_FRAMES
from frame_helpers import assert_honest, frame_number
from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.frames import FrameSource
from videoatlas.environment.geometry import grid_for_path
from videoatlas.environment.video import probe
from videoatlas.errors import VideoError

pytestmark = pytest.mark.e2e
DURATION = COUNTER_FRAMES / COUNTER_FPS


@pytest.fixture(params=["bframe_counter_video", "open_gop_counter_video", "hevc_counter_video"])
def reordered_video(request: pytest.FixtureRequest) -> Path:
    """A counter video whose frames are decoded in another order than shown (B-frames, open GOPs)."""
    path: Path = request.getfixturevalue(request.param)
    return path


def backends_for(video: Path) -> list[str]:
    """decord refuses open GOPs (see test_decord_refuses_open_gops)."""
    return ["pyav", "decord"] if video.name == "counter_bframes.mp4" else ["pyav"]


@pytest.mark.parametrize("path", [(), (5,), (63,), (40, 5)])
def test_every_grid_frame_of_b_frame_video_lies_inside_its_cell(reordered_video: Path, path: tuple[int, ...]) -> None:
    for backend in backends_for(reordered_video):
        with FrameSource(reordered_video, backend=backend) as src:
            grid = grid_for_path(src.duration, path)
            frames = src.fetch_cells([c.interval for c in grid.cells], 96)
            for cell, frame in zip(grid.cells, frames, strict=True):
                assert frame.available, (backend, frame.reason)
                assert_honest(frame, cell.interval)


def test_root_grid_of_b_frame_video_decodes_one_keyframe_per_cell(reordered_video: Path) -> None:
    with FrameSource(reordered_video) as src:
        grid = grid_for_path(src.duration)
        frames = src.fetch_cells([c.interval for c in grid.cells], 96)
        stats = src.stats()
    # Every 1.25 s cell holds a keyframe (one every second or less), and each snap must hold.
    assert all(f.method == "keyframe" for f in frames)
    assert stats.demoted_keyframes == 0
    assert stats.keyframe_snaps == stats.seeks == 64
    # One packet decoded per cell: the keyframe alone, without the B-frames after it.
    assert stats.packets_decoded == stats.frames_decoded == 64


def test_decord_snaps_to_keyframes_of_b_frame_h264(bframe_counter_video: Path) -> None:
    with FrameSource(bframe_counter_video, backend="decord") as src:
        grid = grid_for_path(src.duration)
        frames = src.fetch_cells([c.interval for c in grid.cells], 96)
        assert all(f.method == "keyframe" for f in frames)
        assert src.stats().keyframe_snaps == 64


@pytest.mark.parametrize("video", ["open_gop_counter_video", "hevc_counter_video"])
def test_decord_refuses_open_gops(video: str, request: pytest.FixtureRequest) -> None:
    # decord counts the leading B-frames the decoder skips after an open-GOP keyframe, and returns
    # frames a few later than it says; its keyframe index gives it away.
    src = FrameSource(request.getfixturevalue(video), backend="decord")
    with src, pytest.raises(VideoError, match="use the pyav backend"):
        src.frames_at([1.0], 64)


def test_exact_frames_around_open_gop_keyframes(reordered_video: Path) -> None:
    # Keyframes at 0.96 s (open-GOP H.264) or 1.0 s: in open GOPs the frames just before them are
    # B-frames that reference them, decoded after them; reaching those needs the keyframe before.
    times = [0.0, 0.9, 0.92, 0.96, 0.98, 1.0, 1.04, 40.92, 79.96]
    for backend in backends_for(reordered_video):
        with FrameSource(reordered_video, backend=backend) as src:
            for t, frame in zip(times, src.frames_at(times, 96), strict=True):
                assert frame.method == "exact"
                assert frame_number(frame) == int(t * COUNTER_FPS + 1e-9), (backend, t)


@pytest.fixture(params=["cut_mkv", "cut_mp4"])
def cut_video(request: pytest.FixtureRequest) -> Path:
    path: Path = request.getfixturevalue(request.param)
    return path


def test_probe_reports_where_a_cut_file_really_ends(cut_video: Path) -> None:
    info = probe(cut_video)
    assert info.duration == pytest.approx(DURATION)  # what the header still claims
    assert info.decodable_end is not None
    assert 30 < info.decodable_duration < 50
    assert info.as_dict()["decodable_duration"] == info.decodable_end


def test_cut_file_shows_lost_cells_as_unavailable_and_never_a_frame_from_elsewhere(cut_video: Path) -> None:
    backends = ["pyav", "decord"] if cut_video.suffix == ".mkv" else ["pyav"]  # decord cannot open the MP4
    for backend in backends:
        with FrameSource(cut_video, backend=backend) as src:
            end = src.info.decodable_duration
            grid = grid_for_path(src.duration)
            frames = src.fetch_cells([c.interval for c in grid.cells], 96)
            for cell, frame in zip(grid.cells, frames, strict=True):
                if cell.interval.end <= end:
                    assert frame.available, (backend, cell.index, frame.reason)
                if frame.available:
                    assert_honest(frame, cell.interval)
                    assert frame.time < end
                else:
                    assert cell.interval.mid >= end - 1 / COUNTER_FPS, (backend, cell.index)
            lost = sum(not f.available for f in frames)
            assert lost >= 64 - int(end / grid.cells[0].interval.span) - 1
            assert src.stats().unavailable == lost


def test_cut_file_grid_marks_and_counts_lost_cells(cut_mkv: Path) -> None:
    with FrameSource(cut_mkv) as src:
        view = VideoAtlas(src, cell_px=64).grid()
        end = src.info.decodable_duration
    lost = [f for f in view.image.frames if f["method"] == "unavailable"]
    assert lost and all(f["time"] >= end - 1.25 for f in lost)


@pytest.mark.parametrize("video", ["phone_video", "phone_video_mkv", "rotate_tag_video"])
def test_rotated_video_renders_upright(video: str, request: pytest.FixtureRequest) -> None:
    path: Path = request.getfixturevalue(video)
    info = probe(path)
    assert (info.width, info.height, info.rotation) == (240, 320, 270)
    for backend in ("pyav", "decord"):
        with FrameSource(path, backend=backend) as src:
            frames = src.frames_at([2.0, 7.52], 160)
            snaps = src.fetch_cells([c.interval for c in grid_for_path(src.duration).cells], 160)
        for frame, expected in zip(frames, (50, 188), strict=True):
            assert frame.image is not None and frame.image.shape == (160, 120, 3), backend
            # Read sideways, the counter's blocks would spell another number.
            assert frame_number(frame) == expected, backend
        assert all(f.image is not None and f.image.shape[0] > f.image.shape[1] for f in snaps)
