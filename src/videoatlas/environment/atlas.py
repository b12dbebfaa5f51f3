"""The VideoAtlas environment for one video: grids, zooms, investigations and scratchpads as JPEGs.

Every observation is rendered from the frame source, keyed by the video's content identity and the
render parameters, and stored in an optional on-disk cache; a second identical request returns the
same bytes without decoding (that is what lets a VLM server's prefix cache hit).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from PIL import Image

from videoatlas import limits
from videoatlas.environment.cache import RenderCache, render_key
from videoatlas.environment.frames import FrameSource
from videoatlas.environment.geometry import (
    CellPath,
    Direction,
    Grid,
    Interval,
    check_inside,
    grid_for_path,
    grid_over,
    investigate_interval,
    merge_intervals,
)
from videoatlas.environment.render import (
    RENDER_VERSION,
    ScratchTile,
    encode_jpeg,
    render_grid,
    render_mosaic,
    render_scratchpad_page,
    render_zoom,
    time_decimals,
)
from videoatlas.environment.subtitles import Subtitles
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import BadInputError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RenderedImage:
    """A rendered observation: JPEG bytes, their hash, and what went into them."""

    kind: str
    jpeg: bytes
    sha256: str
    width: int
    height: int
    frames: tuple[dict[str, Any], ...]
    """Per cell or tile: the frame's time and how it was obtained (keyframe, exact, unavailable)."""
    cache_hit: bool
    render_s: float
    path: Path | None = None

    def save(self, path: str | Path) -> Path:
        """Write the JPEG to ``path``."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(self.jpeg)
        return out


@dataclass(frozen=True, slots=True)
class GridView:
    """A grid and its rendered picture."""

    grid: Grid
    image: RenderedImage


@dataclass(frozen=True, slots=True)
class CellPick:
    """What one grid cell shows beside (or instead of) its fixed frame: chosen by whoever asks for the grid.

    ``time``: a frame from inside the cell's own interval shown in place of the fixed one (the label
    then says ``@`` and that frame's time). ``score``: a relevance mark in [0, 1] printed in the label
    as ``rel`` 0-99. Neither moves a cell's interval: the grid's geometry is the same either way.
    """

    time: float | None = None
    score: float | None = None

    def note(self, decimals: int) -> str:
        """The cell's second label line: ``@12:03.5 rel 83``."""
        parts = []
        if self.time is not None:
            parts.append("@" + format_ts(self.time, decimals))
        if self.score is not None:
            parts.append(f"rel {min(99, max(0, round(self.score * 100)))}")
        return " ".join(parts)


def check_picks(grid: Grid, picks: Mapping[int, CellPick]) -> None:
    """Refuse a pick for a cell the grid lacks, a frame outside its cell, or a score outside [0, 1]."""
    for index, pick in picks.items():
        if not 0 <= index < len(grid.cells):
            raise BadInputError(f"no cell {index} in a {grid.k}x{grid.k} grid")
        cell = grid.cells[index].interval
        if pick.time is not None and not cell.start <= pick.time < cell.end:
            raise BadInputError(
                f"frame {pick.time:.3f} s is not inside cell {index} ({cell.start:.3f}-{cell.end:.3f} s)"
            )
        if pick.score is not None and not 0.0 <= pick.score <= 1.0:
            raise BadInputError(f"cell {index}'s relevance {pick.score} is not in [0, 1]")


def _exact(x: float) -> str:
    return float(x).hex()


class VideoAtlas:
    """The environment over one video. Thread-safe; ``a*`` methods never block the event loop."""

    def __init__(
        self,
        source: FrameSource,
        k: int = 8,
        cell_px: int = 320,
        cache: RenderCache | None = None,
        jpeg_quality: int = 85,
        zoom_px: int = 1280,
        subtitles: Subtitles | None = None,
        grid_checked: bool = False,
    ) -> None:
        if not grid_checked:  # a run's configuration checked its grid when it was made
            limits.check_grid(k, cell_px)
        if not 1 <= jpeg_quality <= 95:
            raise BadInputError(f"JPEG quality must be 1..95, got {jpeg_quality}")
        self.source = source
        self.k = k
        self.cell_px = cell_px
        self.cache = cache
        self.jpeg_quality = jpeg_quality
        self.zoom_px = zoom_px
        self.subtitles = subtitles

    @property
    def duration(self) -> float:
        """Video duration in seconds."""
        return self.source.duration

    # -- caching -----------------------------------------------------------------------------

    def _params(self, kind: str, **extra: Any) -> dict[str, Any]:
        return {
            "v": RENDER_VERSION,
            "video": self.source.identity,
            "backend": self.source.backend,
            "kind": kind,
            "quality": self.jpeg_quality,
            **extra,
        }

    def _cached(self, kind: str, params: dict[str, Any], draw: Any) -> RenderedImage:
        began = time.perf_counter()
        key = render_key(params)
        if self.cache is not None:
            found = self.cache.get(key)
            if found is not None:
                data, meta = found
                return RenderedImage(
                    kind,
                    data,
                    meta["sha256"],
                    meta["width"],
                    meta["height"],
                    tuple(meta["frames"]),
                    True,
                    time.perf_counter() - began,
                    self.cache.path_for(key),
                )
        image, frames = draw()
        data = encode_jpeg(image, self.jpeg_quality)
        digest = hashlib.sha256(data).hexdigest()
        path = None
        if self.cache is not None:
            meta = {"sha256": digest, "width": image.width, "height": image.height, "frames": frames}
            path = self.cache.put(key, data, meta)
        return RenderedImage(
            kind,
            data,
            digest,
            image.width,
            image.height,
            tuple(frames),
            False,
            time.perf_counter() - began,
            path,
        )

    # -- observations ------------------------------------------------------------------------

    def grid(
        self, path: CellPath = (), dead_zones: Sequence[Interval] = (), picks: Mapping[int, CellPick] | None = None
    ) -> GridView:
        """The grid that expanding ``path`` shows (``()``: the root grid over the whole video).

        ``picks``: per cell index, a frame of its own to show or a relevance mark (:class:`CellPick`).
        """
        return self._render(grid_for_path(self.duration, path, self.k), dead_zones, "grid", picks)

    def grid_over(
        self, interval: Interval, dead_zones: Sequence[Interval] = (), picks: Mapping[int, CellPick] | None = None
    ) -> GridView:
        """A grid over an explicit time range inside the video."""
        return self._render(grid_over(check_inside(interval, self.duration), self.k), dead_zones, "range", picks)

    def investigate(
        self,
        anchor: Interval,
        direction: Direction,
        window_s: float | None = None,
        dead_zones: Sequence[Interval] = (),
    ) -> GridView:
        """A grid over the window just before or after ``anchor`` (INVESTIGATE)."""
        window = investigate_interval(self.duration, anchor, direction, window_s, self.k)
        return self._render(grid_over(window, self.k), dead_zones, "investigate")

    def _render(
        self, grid: Grid, dead_zones: Sequence[Interval], kind: str, picks: Mapping[int, CellPick] | None = None
    ) -> GridView:
        picks = {i: p for i, p in (picks or {}).items() if p.time is not None or p.score is not None}
        check_picks(grid, picks)
        relevant = [
            Interval(max(z.start, grid.interval.start), min(z.end, grid.interval.end))
            for z in merge_intervals(dead_zones)
            if z.overlap(grid.interval) > 0
        ]
        params = self._params(
            kind,
            start=_exact(grid.interval.start),
            end=_exact(grid.interval.end),
            k=self.k,
            cell_px=self.cell_px,
            dead=[[_exact(z.start), _exact(z.end)] for z in relevant],
        )
        if picks:  # only then: grids without picks keep the cache keys they always had
            params["picks"] = [
                [i, None if p.time is None else _exact(p.time), None if p.score is None else round(p.score, 2)]
                for i, p in sorted(picks.items())
            ]

        def draw() -> tuple[Image.Image, list[dict[str, Any]]]:
            frames = self.source.fetch_cells([c.interval for c in grid.cells], self.cell_px)
            records = [
                {"cell": c.index, "time": f.time, "method": f.method, "reason": f.reason}
                for c, f in zip(grid.cells, frames, strict=True)
            ]
            shown = dict(picks)
            chosen = sorted((i, p.time) for i, p in picks.items() if p.time is not None)
            decoded = self.source.frames_at([t for _, t in chosen], self.cell_px) if chosen else []
            for (i, _), frame in zip(chosen, decoded, strict=True):
                cell = grid.cells[i].interval
                if frame.image is not None and cell.start <= frame.time < cell.end:
                    frames[i] = frame
                    records[i] = {"cell": i, "time": frame.time, "method": frame.method, "picked": True}
                    shown[i] = CellPick(frame.time, picks[i].score)  # the label names the frame on screen
                else:  # the frame on screen then began before the cell (or did not decode): the fixed one stays
                    records[i]["pick_dropped"] = f"no frame of the cell's own at {picks[i].time:.3f} s"
                    shown[i] = CellPick(None, picks[i].score)
            decimals = time_decimals(grid.cells[0].interval.span)
            lines = [shown[c.index].note(decimals) if c.index in shown else "" for c in grid.cells] if picks else []
            return render_grid(grid.cells, frames, self.k, self.cell_px, relevant, lines), records

        return GridView(grid, self._cached(kind, params, draw))

    @property
    def zoom_box(self) -> int:
        """The long side of a ZOOM close-up: ``zoom_px``, never more than the source has (no upscaling)."""
        return min(self.zoom_px, max(self.source.info.width, self.source.info.height))

    def zoom(self, t: float, tag: str | None = None, cell: int | None = None) -> RenderedImage:
        """The exact frame on screen at ``t``, at native size up to ``zoom_px`` on its long side (ZOOM).

        ``tag`` (an evidence label) is burned in before the time as ``[C]``, so a close-up of a
        collected item can be shown beside the scratchpad and cross-referenced with it; ``cell``
        burns in an id the way grid cells carry theirs (``3  01:52.70``), for frames shown as a set.
        """
        if not 0 <= t <= self.duration:
            raise BadInputError(f"time {t:.3f}s is outside the video (0..{self.duration:.3f}s)")
        box = self.zoom_box
        extra: dict[str, Any] = {"tag": tag} if tag else {}
        if cell is not None:
            extra["cell"] = cell
        params = self._params("zoom", t=_exact(t), px=box, **extra)

        def draw() -> tuple[Image.Image, list[dict[str, Any]]]:
            frame = self.source.frames_at([t], box)[0]
            stamp = format_ts(frame.time, 2)
            label = f"[{tag}] {stamp}" if tag else stamp
            image = render_zoom(frame, f"{cell}  {label}" if cell is not None else label)
            return image, [{"time": frame.time, "method": frame.method, "reason": frame.reason}]

        return self._cached("zoom", params, draw)

    def tile_size(self, short_px: int) -> tuple[int, int]:
        """A tile with the video's displayed aspect whose short side is ``short_px`` (never above the source's)."""
        w, h = self.source.info.width, self.source.info.height
        short = min(short_px, min(w, h))
        return (round(short * w / h), short) if w >= h else (short, round(short * h / w))

    def mosaic(
        self, times: Sequence[float], cols: int, rows: int, short_px: int = 256, first_id: int = 0
    ) -> list[RenderedImage]:
        """The exact frames at ``times`` tiled ``cols`` x ``rows`` to a page, labelled with an id and a time.

        The labels read like a grid's (``id  time``), so a model cites a frame the same way whatever
        drew it; ids run from ``first_id`` across pages. Any agent can show any set of moments this way.
        """
        if cols < 1 or rows < 1:
            raise BadInputError("a mosaic needs at least one column and one row")
        if not times:
            raise BadInputError("a mosaic needs at least one time")
        tile_w, tile_h = self.tile_size(short_px)
        per_page = cols * rows
        span = (max(times) - min(times)) / max(1, len(times) - 1) if len(times) > 1 else self.duration
        decimals = time_decimals(span)
        pages = []
        for first in range(0, len(times), per_page):
            chunk = list(times[first : first + per_page])
            ids = list(range(first_id + first, first_id + first + len(chunk)))
            params = self._params("mosaic", times=[_exact(t) for t in chunk], ids=ids, cols=cols, tile=[tile_w, tile_h])

            def draw(chunk: list[float] = chunk, ids: list[int] = ids) -> tuple[Image.Image, list[dict[str, Any]]]:
                frames = self.source.frames_at(chunk, max(tile_w, tile_h))
                labels = [f"{i}  {format_ts(f.time, decimals)}" for i, f in zip(ids, frames, strict=True)]
                image = render_mosaic(frames, labels, min(cols, len(chunk)), tile_w, tile_h)
                notes = [
                    {"id": i, "time": f.time, "method": f.method, "reason": f.reason}
                    for i, f in zip(ids, frames, strict=True)
                ]
                return image, notes

            pages.append(self._cached("mosaic", params, draw))
        return pages

    def scratchpad(
        self, tiles: Sequence[ScratchTile], per_page: int = 16, px: int | None = None
    ) -> list[RenderedImage]:
        """Evidence tiles as labelled pages of at most ``per_page`` tiles each, in label order.

        ``px``: a tile's side (a frame's long side), the atlas's cell size when None.
        """
        if per_page < 1:
            raise BadInputError("scratchpad pages need at least one tile")
        tile_px = self.cell_px if px is None else px
        if problem := limits.cell_px_problem(tile_px):
            raise BadInputError(f"scratchpad tiles: {problem}")
        ordered = sorted(tiles, key=lambda tl: tl.index)
        pages = []
        for first in range(0, len(ordered), per_page):
            page = ordered[first : first + per_page]
            params = self._params(
                "scratchpad",
                px=tile_px,
                tiles=[[tl.index, _exact(tl.time), tl.subtitle or ""] for tl in page],
            )

            def draw(page: list[ScratchTile] = page) -> tuple[Image.Image, list[dict[str, Any]]]:
                frames = self.source.frames_at([tl.time for tl in page], tile_px)
                image = render_scratchpad_page(page, frames, tile_px)
                notes = [
                    {"tile": tl.index, "time": f.time, "method": f.method, "reason": f.reason}
                    for tl, f in zip(page, frames, strict=True)
                ]
                return image, notes

            pages.append(self._cached("scratchpad", params, draw))
        return pages

    # -- async -------------------------------------------------------------------------------

    async def _off_loop(self, fn: Any, *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.source.executor, partial(fn, *args))

    async def agrid(
        self, path: CellPath = (), dead_zones: Sequence[Interval] = (), picks: Mapping[int, CellPick] | None = None
    ) -> GridView:
        """:meth:`grid` off the event loop."""
        result: GridView = await self._off_loop(self.grid, path, list(dead_zones), picks)
        return result

    async def agrid_over(
        self, interval: Interval, dead_zones: Sequence[Interval] = (), picks: Mapping[int, CellPick] | None = None
    ) -> GridView:
        """:meth:`grid_over` off the event loop."""
        result: GridView = await self._off_loop(self.grid_over, interval, list(dead_zones), picks)
        return result

    async def azoom(self, t: float, tag: str | None = None, cell: int | None = None) -> RenderedImage:
        """:meth:`zoom` off the event loop."""
        result: RenderedImage = await self._off_loop(self.zoom, t, tag, cell)
        return result

    async def amosaic(
        self, times: Sequence[float], cols: int, rows: int, short_px: int = 256, first_id: int = 0
    ) -> list[RenderedImage]:
        """:meth:`mosaic` off the event loop."""
        result: list[RenderedImage] = await self._off_loop(self.mosaic, list(times), cols, rows, short_px, first_id)
        return result

    async def ascratchpad(
        self, tiles: Sequence[ScratchTile], per_page: int = 16, px: int | None = None
    ) -> list[RenderedImage]:
        """:meth:`scratchpad` off the event loop."""
        result: list[RenderedImage] = await self._off_loop(self.scratchpad, list(tiles), per_page, px)
        return result
