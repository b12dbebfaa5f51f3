"""Frame access on real, generated videos whose frames carry their own frame numbers."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from conftest import COUNTER_FPS, COUNTER_FRAMES
from frame_helpers import assert_honest, frame_number
from videoatlas.environment.frames import FrameLRU, FrameSource
from videoatlas.environment.geometry import Interval, grid_for_path, grid_over
from videoatlas.environment.video import DecodedFrame
from videoatlas.errors import BadInputError

pytestmark = pytest.mark.e2e
BACKENDS = ["pyav", "decord"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("path", [(), (0,), (17,), (63,), (40, 5)])
def test_every_grid_frame_lies_inside_its_cell(counter_video: Path, backend: str, path: tuple[int, ...]) -> None:
    with FrameSource(counter_video, backend=backend) as src:
        grid = grid_for_path(src.duration, path)
        frames = src.fetch_cells([c.interval for c in grid.cells], 160)
        assert len(frames) == 64
        for cell, frame in zip(grid.cells, frames, strict=True):
            assert frame.available, frame.reason
            assert_honest(frame, cell.interval)


@pytest.mark.parametrize("backend", BACKENDS)
def test_root_grid_uses_keyframes_where_they_are_inside_cells(counter_video: Path, backend: str) -> None:
    with FrameSource(counter_video, backend=backend) as src:
        grid = grid_for_path(src.duration)
        frames = src.fetch_cells([c.interval for c in grid.cells], 160)
        methods = {f.method for f in frames}
        # 1.25 s cells, keyframes every 2 s: some cells hold a keyframe, some do not.
        assert methods == {"keyframe", "exact"}
        stats = src.stats()
        assert stats.keyframe_snaps + stats.exact_frames == 64


def test_exact_targets_in_one_gop_share_one_pass(counter_video: Path) -> None:
    with FrameSource(counter_video) as src:
        grid = grid_for_path(src.duration, (9,))  # 11.25-12.5 s: keyframes at 10 and 12 s
        frames = src.fetch_cells([c.interval for c in grid.cells], 96)
        assert {f.method for f in frames} == {"exact", "keyframe"}
        stats = src.stats()
        # One seek for the keyframe snap, at most two passes (one per GOP touched) for 63 cells.
        assert stats.seeks <= 3
        assert stats.frames_decoded <= 2 * 50 + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_interval_grid(counter_video: Path, backend: str) -> None:
    with FrameSource(counter_video, backend=backend) as src:
        grid = grid_over(Interval(12.3, 19.7))
        for cell, frame in zip(grid.cells, src.fetch_cells([c.interval for c in grid.cells], 96), strict=True):
            assert_honest(frame, cell.interval)


@pytest.mark.parametrize("backend", BACKENDS)
def test_exact_frames_at_times(counter_video: Path, backend: str) -> None:
    times = [0.0, 0.03, 1.99, 2.0, 2.01, 33.333, 79.9]
    with FrameSource(counter_video, backend=backend) as src:
        for t, frame in zip(times, src.frames_at(times, 320), strict=True):
            assert frame.method == "exact"
            assert frame_number(frame) == int(t * COUNTER_FPS + 1e-9)


def test_frames_are_scaled_in_the_decoder_to_fit_the_box(counter_video: Path) -> None:
    with FrameSource(counter_video) as src:
        (frame,) = src.frames_at([5.0], 100)
        assert frame.image is not None and frame.image.shape == (74, 100, 3)  # 320x240 -> 100x75, even


def test_backends_agree_on_which_frames(counter_video: Path) -> None:
    chosen = {}
    for backend in BACKENDS:
        with FrameSource(counter_video, backend=backend) as src:
            grid = grid_for_path(src.duration, (3,))
            chosen[backend] = [frame_number(f) for f in src.fetch_cells([c.interval for c in grid.cells], 96)]
    assert chosen["pyav"] == chosen["decord"]


def test_lru_serves_repeated_requests_without_decoding(counter_video: Path) -> None:
    with FrameSource(counter_video) as src:
        windows = [c.interval for c in grid_for_path(src.duration).cells]
        first = src.fetch_cells(windows, 96)
        decoded = src.stats().frames_decoded
        second = src.fetch_cells(windows, 96)
        assert src.stats().frames_decoded == decoded
        assert src.cache.hits >= 64
        for a, b in zip(first, second, strict=True):
            assert a.image is not None and b.image is not None
            assert np.array_equal(a.image, b.image)


def test_lru_evicts_by_bytes() -> None:
    lru = FrameLRU(max_bytes=3 * 100)
    for i in range(5):
        lru.put(i, DecodedFrame(float(i), np.zeros((10, 10), np.uint8), "exact"))
    assert len(lru) == 3 and lru.nbytes == 300
    assert lru.get(0) is None and lru.get(4) is not None


def test_concurrent_threads_get_the_same_frames_as_sequential(counter_video: Path) -> None:
    paths = [(i,) for i in range(0, 64, 4)]
    with FrameSource(counter_video) as ref:
        expected = {
            p: [
                frame_number(f) for f in ref.fetch_cells([c.interval for c in grid_for_path(ref.duration, p).cells], 64)
            ]
            for p in paths
        }
    with FrameSource(counter_video, max_readers=3) as src:

        def work(p: tuple[int, ...]) -> tuple[tuple[int, ...], list[int]]:
            cells = grid_for_path(src.duration, p).cells
            return p, [frame_number(f) for f in src.fetch_cells([c.interval for c in cells], 64)]

        with ThreadPoolExecutor(max_workers=8) as pool:
            results = dict(pool.map(work, paths * 2))
    assert results == expected


async def test_async_fetch_does_not_block_the_event_loop(counter_video: Path) -> None:
    ticks = 0
    stop = asyncio.Event()

    async def heartbeat() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.001)

    with FrameSource(counter_video, cache=FrameLRU(0)) as src:
        beat = asyncio.create_task(heartbeat())
        loop_thread = threading.get_ident()
        grids = [grid_for_path(src.duration, (i,)) for i in range(0, 64, 8)]
        results = await asyncio.gather(*(src.afetch_cells([c.interval for c in g.cells], 96) for g in grids))
        stop.set()
        await beat
    assert all(len(r) == 64 for r in results)
    assert threading.get_ident() == loop_thread
    # Eight fine grids take far longer than a few milliseconds to decode; the loop kept ticking.
    assert ticks > 5


def test_corrupt_stream_marks_cells_unavailable_and_keeps_the_rest_honest(corrupt_video: Path) -> None:
    for backend in BACKENDS:
        with FrameSource(corrupt_video, backend=backend) as src:
            grid = grid_for_path(src.duration)
            frames = src.fetch_cells([c.interval for c in grid.cells], 96)
            unavailable = [f for f in frames if not f.available]
            assert 0 < len(unavailable) < 64, backend
            for cell, frame in zip(grid.cells, frames, strict=True):
                if frame.available:
                    assert_honest(frame, cell.interval)
                else:
                    assert frame.method == "unavailable" and frame.reason
            assert src.stats().decode_errors > 0


def test_requests_outside_the_video_are_rejected(counter_video: Path) -> None:
    duration = COUNTER_FRAMES / COUNTER_FPS
    with FrameSource(counter_video) as src:
        with pytest.raises(BadInputError, match="outside the video"):
            src.fetch_cells([Interval(duration - 1, duration + 5)], 64)
        with pytest.raises(BadInputError, match="outside the video"):
            src.frames_at([-1.0], 64)
        with pytest.raises(BadInputError, match="at least 16 px"):
            src.fetch_cells([Interval(0, 1)], 4)
