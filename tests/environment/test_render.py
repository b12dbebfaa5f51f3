"""Rendered observations: labels, dead zones, unavailable cells, scratchpads, determinism and caching."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.cache import RenderCache
from videoatlas.environment.frames import FrameSource
from videoatlas.environment.geometry import Interval
from videoatlas.environment.render import ScratchTile, evidence_label, layout
from videoatlas.errors import BadInputError

pytestmark = pytest.mark.e2e
PX = 128


def pixels(jpeg: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB")).astype(int)


def cell_box(img: np.ndarray, index: int, k: int = 8, px: int = PX) -> np.ndarray:
    row, col = divmod(index, k)
    return img[row * px : (row + 1) * px, col * px : (col + 1) * px]


def is_red(region: np.ndarray) -> np.ndarray:
    return (region[..., 0] > 150) & (region[..., 1] < 90) & (region[..., 2] < 90)


@pytest.fixture
def atlas(counter_video: Path, tmp_path: Path) -> Iterator[VideoAtlas]:
    src = FrameSource(counter_video)
    yield VideoAtlas(src, cell_px=PX, cache=RenderCache(tmp_path / "renders"))
    src.close()


def test_grid_has_a_label_in_every_cell(atlas: VideoAtlas) -> None:
    view = atlas.grid()
    img = pixels(view.image.jpeg)
    assert img.shape == (8 * PX, 8 * PX, 3)
    for i in range(64):
        label = cell_box(img, i)[2:16, 2:40]
        # A black plate with white glyphs on it.
        assert (label.mean(axis=2) < 40).mean() > 0.3, i
        assert (label.min(axis=2) > 200).sum() > 5, i


def test_dead_zones_black_out_covered_cells_and_mark_partial_ones(atlas: VideoAtlas) -> None:
    grid = atlas.grid().grid
    dead = [Interval(grid.cells[10].interval.start, grid.cells[12].interval.end)]
    partial = grid.cells[20].interval
    dead.append(Interval(partial.start, partial.start + partial.span / 2))
    img = pixels(atlas.grid((), dead).image.jpeg)
    for i in (10, 11, 12):
        body = cell_box(img, i)[20:]
        assert (body.mean(axis=2) < 40).mean() > 0.8, "explored cell is not blacked out"
        assert is_red(body).sum() > 200, "explored cell carries no red cross"
    bar = cell_box(img, 20)[-4:]
    red_share = is_red(bar).mean(axis=0)
    assert red_share[: PX // 2 - 4].mean() > 0.8 and red_share[PX // 2 + 4 :].mean() < 0.1
    untouched = cell_box(img, 30)
    assert not is_red(untouched[-4:]).any()


def test_unavailable_cells_render_grey_and_the_grid_still_renders(corrupt_video: Path) -> None:
    with FrameSource(corrupt_video) as src:
        view = VideoAtlas(src, cell_px=PX).grid()
    bad = [f["cell"] for f in view.image.frames if f["method"] == "unavailable"]
    assert bad
    img = pixels(view.image.jpeg)
    for i in bad:
        body = cell_box(img, i)[20:-20, 10:-10]
        grey = (np.abs(body - 70).max(axis=2) < 20).mean()
        assert grey > 0.6


def test_identical_requests_give_identical_bytes_with_and_without_cache(counter_video: Path, tmp_path: Path) -> None:
    shas = []
    for _ in range(2):
        with FrameSource(counter_video) as src:
            shas.append(VideoAtlas(src, cell_px=PX).grid((5,)).image.sha256)
    assert shas[0] == shas[1]
    with FrameSource(counter_video) as src:
        atlas = VideoAtlas(src, cell_px=PX, cache=RenderCache(tmp_path / "c"))
        first = atlas.grid((5,))
        decoded = src.stats().frames_decoded
        again = atlas.grid((5,))
        assert not first.image.cache_hit and again.image.cache_hit
        assert again.image.jpeg == first.image.jpeg and again.image.sha256 == shas[0]
        assert src.stats().frames_decoded == decoded
        assert again.image.frames == first.image.frames
        other = atlas.grid((5,), [Interval(0, 1)])  # dead zone outside this grid: same picture, same key
        assert other.image.cache_hit
        masked = atlas.grid((5,), [first.grid.cells[3].interval])
        assert not masked.image.cache_hit and masked.image.sha256 != first.image.sha256


def test_zoom_is_high_resolution_and_labelled(atlas: VideoAtlas) -> None:
    shot = atlas.zoom(10.0)
    assert (shot.width, shot.height) == (320, 240)  # the source is 320x240; never upscaled
    assert shot.frames[0]["method"] == "exact" and shot.frames[0]["time"] == pytest.approx(10.0)
    img = pixels(shot.jpeg)
    assert (img[4:16, 4:40].mean(axis=2) < 60).mean() > 0.3
    with pytest.raises(BadInputError):
        atlas.zoom(1e6)


def test_investigate_lays_a_grid_just_after_or_before(atlas: VideoAtlas) -> None:
    anchor = Interval(20.0, 21.0)
    after = atlas.investigate(anchor, "after")
    assert after.grid.interval == Interval(20.0, 28.0)
    before = atlas.investigate(anchor, "before", window_s=4.0)
    assert before.grid.interval == Interval(17.0, 21.0)
    for frame in before.image.frames:
        assert 17.0 - 0.04 <= frame["time"] < 21.0


def test_scratchpad_is_labelled_near_square_and_paged(atlas: VideoAtlas) -> None:
    tiles = [ScratchTile(i, 1.0 + i, f"line {i}" if i % 2 else None) for i in range(20)]
    pages = atlas.scratchpad(tiles, per_page=16)
    assert len(pages) == 2
    assert (pages[0].width, pages[0].height) == (4 * PX, 4 * PX)
    assert (pages[1].width, pages[1].height) == (2 * PX, 2 * PX)
    assert [f["tile"] for f in pages[1].frames] == [16, 17, 18, 19]
    five = atlas.scratchpad(tiles[:5])
    assert (five[0].width, five[0].height) == (3 * PX, 2 * PX)
    img = pixels(pages[0].jpeg)
    assert (img[2:16, 2:60].mean(axis=2) < 40).mean() > 0.3  # label plate of [A]
    subtitle_band = img[PX - 12 : PX - 2, PX + 4 : 2 * PX - 4]  # tile 1 has a subtitle: yellow text
    assert ((subtitle_band[..., 0] > 180) & (subtitle_band[..., 2] < 160)).sum() > 3


def test_scratchpad_tiles_can_be_larger_than_cells_and_their_frames_are_decoded_that_large(atlas: VideoAtlas) -> None:
    """A page at 2.5 cells a tile: the same frames, more pixels of each (what EEA's answer reads the memory at)."""
    tiles = [ScratchTile(i, 1.0 + i) for i in range(4)]
    side = 5 * PX // 2
    small, large = atlas.scratchpad(tiles)[0], atlas.scratchpad(tiles, px=side)[0]
    assert (large.width, large.height) == (2 * side, 2 * side)
    assert [f["time"] for f in large.frames] == [f["time"] for f in small.frames]
    row = pixels(large.jpeg)[side // 2 + 10, :side].astype(int)  # across the middle of tile [A]
    shown = np.where(np.abs(row - 24).max(axis=1) > 12)[0]  # not the page's background (24, 24, 24)
    assert shown.min() <= 2 and shown.max() >= side - 3  # the frame fills the tile's width: decoded that large
    with pytest.raises(BadInputError, match="scratchpad tiles: cell size must be between"):
        atlas.scratchpad(tiles, px=8)


async def test_async_rendering(atlas: VideoAtlas) -> None:
    view = await atlas.agrid((2,))
    shot = await atlas.azoom(3.0)
    pages = await atlas.ascratchpad([ScratchTile(0, 2.0)])
    assert view.image.width == 8 * PX and shot.width == 320 and len(pages) == 1


@pytest.mark.unit
def test_labels_and_layout_and_tokens() -> None:
    assert [evidence_label(i) for i in (0, 1, 25, 26, 27, 51, 52, 701, 702)] == [
        "A",
        "B",
        "Z",
        "AA",
        "AB",
        "AZ",
        "BA",
        "ZZ",
        "AAA",
    ]
    assert layout(1) == (1, 1) and layout(5) == (3, 2) and layout(16) == (4, 4) and layout(17) == (5, 4)


def test_a_mosaic_shows_frames_at_any_times_labelled_like_a_grid(atlas: VideoAtlas) -> None:
    times = [1.0, 3.3, 7.9, 12.0, 40.04, 41.0, 60.5, 70.2, 79.0, 5.0]
    pages = atlas.mosaic(times, cols=4, rows=2, short_px=120, first_id=3)
    strip = 12 + 2 * 2 + 2  # a caption strip above each frame: label size 12 and its padding
    assert [(p.width, p.height) for p in pages] == [(4 * 160, 2 * (120 + strip)), (2 * 160, 120 + strip)]
    notes = [f for p in pages for f in p.frames]
    assert [f["id"] for f in notes] == list(range(3, 13))
    assert [f["time"] for f in notes] == pytest.approx(times, abs=0.04)  # the exact frame on screen at each time
    first = pixels(pages[0].jpeg)
    direct = atlas.source.frames_at([times[5]], 160)[0]
    assert direct.image is not None
    top = 120 + strip + strip  # second row, second tile: times[5]
    tile = first[top : top + 120, 160:320].astype(int)
    assert np.abs(tile - direct.image.astype(int)).mean() < 12  # the frame itself, untouched by its label
    caption = first[120 + strip + 1 : 120 + strip + strip - 2, 162:200]
    assert (caption.mean(axis=2) < 60).mean() > 0.3  # the caption's plate
    again = atlas.mosaic(times, cols=4, rows=2, short_px=120, first_id=3)
    assert [p.sha256 for p in again] == [p.sha256 for p in pages] and all(p.cache_hit for p in again)
    with pytest.raises(BadInputError):
        atlas.mosaic([], cols=4, rows=2)
