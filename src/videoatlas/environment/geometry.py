"""Pure grid geometry of the VideoAtlas: intervals, K x K grids, depths and cell paths.

A grid splits an interval into ``K*K`` cells, numbered row-major from 0. The root grid covers the
whole video; expanding a cell gives the grid over that cell's interval, one depth further down.
A cell is addressed from the root by a path of cell ids such as ``12/5/40``: root cell 12, then
cell 5 of its grid, then cell 40 of that grid. A path of length ``n`` names a cell of the grid at
depth ``n - 1``, whose span is ``T / K**(2n)``.

Boundaries are computed with exact fractions of the enclosing interval, so a boundary reached by
two routes (the end of one cell, the start of the next; a parent's start and its first child's
start) is the same float. Cells therefore tile their interval with no gap and no overlap, and the
last one ends exactly where the interval ends.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from videoatlas import limits
from videoatlas.errors import BadInputError

CellPath = tuple[int, ...]
"""Cell ids from the root grid down; ``()`` is the whole video (the root grid's own interval)."""

Direction = Literal["before", "after"]


@dataclass(frozen=True, slots=True, order=True)
class Interval:
    """A half-open span of video time ``[start, end)`` in seconds."""

    start: float
    end: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.start) and math.isfinite(self.end)):
            raise BadInputError(f"interval bounds must be finite numbers, got {self.start}..{self.end}")
        if self.end < self.start:
            raise BadInputError(f"interval ends before it starts: {self.start}..{self.end}")

    @property
    def span(self) -> float:
        """Length in seconds."""
        return self.end - self.start

    @property
    def mid(self) -> float:
        """Midpoint in seconds."""
        return self.start + (self.end - self.start) / 2

    def contains(self, t: float) -> bool:
        """Whether time ``t`` lies in ``[start, end)``."""
        return self.start <= t < self.end

    def overlap(self, other: Interval) -> float:
        """Seconds shared with ``other`` (0 when disjoint)."""
        return max(0.0, min(self.end, other.end) - max(self.start, other.start))

    def __str__(self) -> str:
        return f"{self.start:.3f}-{self.end:.3f}"


@dataclass(frozen=True, slots=True)
class Cell:
    """One cell of a grid: its row-major index, its interval, and its root path when it has one."""

    index: int
    interval: Interval
    path: CellPath | None


@dataclass(frozen=True, slots=True)
class Grid:
    """A ``k x k`` grid over an interval.

    ``path`` and ``depth`` are set for grids of the hierarchy (the root, or the expansion of a
    cell); grids over custom intervals (INVESTIGATE windows, explicit time ranges) have neither.
    """

    interval: Interval
    k: int
    cells: tuple[Cell, ...]
    path: CellPath | None
    depth: int | None

    @property
    def cell_span(self) -> float:
        """Span of one cell in seconds."""
        return self.interval.span / (self.k * self.k)


def check_k(k: int) -> None:
    """Reject grid sizes outside the shared limits (:mod:`videoatlas.limits`: 2 to 16)."""
    limits.check_k(k)


def check_duration(duration: float) -> None:
    """Reject durations that cannot carry a grid."""
    if not math.isfinite(duration) or duration <= 0:
        raise BadInputError(f"video duration must be a positive number of seconds, got {duration!r}")


def _boundaries(start: float, end: float, n: int) -> list[float]:
    """``n + 1`` boundaries splitting ``[start, end]`` into ``n`` equal parts, first and last exact."""
    lo, hi = Fraction(start), Fraction(end)
    width = hi - lo
    inner = [float(lo + width * Fraction(j, n)) for j in range(1, n)]
    return [start, *inner, end]


def _path_fraction(path: CellPath, k: int) -> tuple[Fraction, Fraction]:
    """The cell's bounds as exact fractions of the video's duration."""
    n_cells = k * k
    lo = Fraction(0)
    width = Fraction(1)
    for depth, cell_id in enumerate(path):
        if not 0 <= cell_id < n_cells:
            raise BadInputError(f"cell id {cell_id} at level {depth} is out of range 0..{n_cells - 1} for K={k}")
        width /= n_cells
        lo += width * cell_id
    return lo, lo + width


def cell_interval(duration: float, path: CellPath, k: int = 8) -> Interval:
    """The interval a root path addresses; ``()`` is the whole video."""
    check_k(k)
    check_duration(duration)
    lo, hi = _path_fraction(path, k)
    total = Fraction(duration)
    return Interval(float(total * lo), float(total * hi))


def split_interval(interval: Interval, k: int = 8) -> list[Interval]:
    """Split an interval into ``k*k`` contiguous cells that tile it exactly."""
    check_k(k)
    if interval.span <= 0:
        raise BadInputError(f"cannot build a grid over an empty interval {interval}")
    bounds = _boundaries(interval.start, interval.end, k * k)
    return [Interval(bounds[j], bounds[j + 1]) for j in range(k * k)]


def grid_for_path(duration: float, path: CellPath = (), k: int = 8) -> Grid:
    """The grid that expanding ``path`` shows (``()`` is the root grid, at depth 0)."""
    check_k(k)
    check_duration(duration)
    parent = _path_fraction(path, k)
    total = Fraction(duration)
    n_cells = k * k
    width = (parent[1] - parent[0]) / n_cells
    bounds = [float(total * (parent[0] + width * j)) for j in range(n_cells + 1)]
    cells = tuple(Cell(j, Interval(bounds[j], bounds[j + 1]), (*path, j)) for j in range(n_cells))
    return Grid(interval=Interval(bounds[0], bounds[-1]), k=k, cells=cells, path=tuple(path), depth=len(path))


def grid_over(interval: Interval, k: int = 8) -> Grid:
    """A grid over a custom interval (an INVESTIGATE window, an explicit time range)."""
    cells = tuple(Cell(j, iv, None) for j, iv in enumerate(split_interval(interval, k)))
    return Grid(interval=interval, k=k, cells=cells, path=None, depth=None)


def cell_span(duration: float, depth: int, k: int = 8) -> float:
    """Span of one cell of a grid at ``depth``: ``T / K**(2(d+1))``."""
    check_k(k)
    check_duration(duration)
    if depth < 0:
        raise BadInputError(f"depth must be >= 0, got {depth}")
    return duration / float(k ** (2 * (depth + 1)))


def auto_max_depth(duration: float, k: int = 8, threshold_s: float = 1.0) -> int:
    """The first depth whose cells are shorter than ``threshold_s`` (1 s by default).

    EXPAND is never offered on a grid at this depth, so it is the deepest grid an agent sees.
    """
    check_k(k)
    check_duration(duration)
    depth = 0
    while cell_span(duration, depth, k) >= threshold_s:
        depth += 1
    return depth


def access_depth(duration: float, fps: float, k: int = 8) -> int:
    """Steps needed to reach any single frame: ``ceil(log_{K^2}(T * fps))`` (the paper's D_max)."""
    check_k(k)
    check_duration(duration)
    frames = max(1.0, duration * fps)
    return max(0, math.ceil(math.log(frames) / math.log(k * k) - 1e-12))


def path_at(duration: float, t: float, depth: int, k: int = 8) -> CellPath:
    """The root path of the cell at ``depth`` whose interval holds time ``t``."""
    check_k(k)
    check_duration(duration)
    if not 0 <= t <= duration:
        raise BadInputError(f"time {t:.3f}s is outside the video (0..{duration:.3f}s)")
    path: list[int] = []
    grid = grid_for_path(duration, (), k)
    for level in range(depth + 1):
        cell = cell_containing(grid, t)
        path.append(cell.index)
        if level < depth:
            grid = grid_for_path(duration, tuple(path), k)
    return tuple(path)


def cell_containing(grid: Grid, t: float) -> Cell:
    """The cell of ``grid`` whose interval holds ``t`` (the grid's end belongs to its last cell)."""
    if not grid.interval.start <= t <= grid.interval.end:
        raise BadInputError(f"time {t:.3f}s is outside the grid {grid.interval}")
    lo, hi = 0, len(grid.cells) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if grid.cells[mid].interval.start <= t:
            lo = mid
        else:
            hi = mid - 1
    return grid.cells[lo]


def path_for_interval(duration: float, interval: Interval, k: int = 8, tol: float = 1e-6) -> CellPath:
    """The root path whose cell is exactly ``interval``; an error when no cell matches."""
    check_k(k)
    check_duration(duration)
    if interval.span <= 0:
        raise BadInputError(f"no cell has an empty interval ({interval})")
    ratio = duration / interval.span
    depth = round(math.log(ratio) / math.log(k * k)) - 1 if ratio > 1 else -1
    if depth < 0:
        candidate: CellPath = ()
    else:
        candidate = path_at(duration, min(interval.mid, duration), depth, k)
    found = cell_interval(duration, candidate, k)
    if abs(found.start - interval.start) > tol or abs(found.end - interval.end) > tol:
        raise BadInputError(f"interval {interval} is not a cell of the K={k} hierarchy")
    return candidate


def format_path(path: CellPath) -> str:
    """``(12, 5, 40)`` -> ``"12/5/40"``; the root is ``"root"``."""
    return "/".join(str(p) for p in path) if path else "root"


def parse_path(text: str, k: int = 8) -> CellPath:
    """Parse ``"12/5/40"`` (or ``"root"``) into a path, checking every id against ``K``."""
    check_k(k)
    cleaned = text.strip().strip("/")
    if cleaned in ("", "root"):
        return ()
    parts = cleaned.split("/")
    path: list[int] = []
    for part in parts:
        if not part.strip().isdigit():
            raise BadInputError(f"cell path {text!r} must be cell ids separated by '/', like 12/5/40")
        value = int(part)
        if value >= k * k:
            raise BadInputError(f"cell id {value} in {text!r} is out of range 0..{k * k - 1} for K={k}")
        path.append(value)
    return tuple(path)


def clip_to_video(interval: Interval, duration: float) -> Interval:
    """Clip an interval to ``[0, duration]``; an error when nothing of it lies inside the video."""
    check_duration(duration)
    start, end = max(0.0, interval.start), min(duration, interval.end)
    if end <= start:
        raise BadInputError(f"interval {interval} lies outside the video (0..{duration:.3f}s)")
    return Interval(start, end)


def check_inside(interval: Interval, duration: float) -> Interval:
    """Return ``interval`` if it lies within the video and is not empty; otherwise an error."""
    check_duration(duration)
    if interval.span <= 0:
        raise BadInputError(f"interval {interval} is empty")
    if interval.start < 0 or interval.end > duration + 1e-9:
        raise BadInputError(f"interval {interval} is outside the video (0..{duration:.3f}s)")
    return Interval(interval.start, min(interval.end, duration))


def investigate_interval(
    duration: float, anchor: Interval, direction: Direction, window_s: float | None = None, k: int = 8
) -> Interval:
    """The window that INVESTIGATE lays a grid over: ``anchor`` itself and what follows (precedes) it.

    By default the window is ``K`` anchor spans long, so its grid's cells are ``1/K`` of the
    anchor's span and the anchor fills its first (last) row: the moment the worker asked about
    stays in view, so what comes right after (before) it is seen next to it. It is clipped to
    the video; an anchor at the video's edge in the asked direction is an error, since there is
    nothing to look at.
    """
    check_k(k)
    check_duration(duration)
    window = window_s if window_s is not None else anchor.span * k
    if window <= 0:
        raise BadInputError(f"investigate window must be positive, got {window}")
    if direction == "after":
        if anchor.end >= duration:
            raise BadInputError(f"nothing lies {direction} {anchor} in a {duration:.3f}s video")
        raw = Interval(anchor.start, anchor.start + max(window, anchor.span))
    elif direction == "before":
        if anchor.start <= 0:
            raise BadInputError(f"nothing lies {direction} {anchor} in a {duration:.3f}s video")
        raw = Interval(max(anchor.end - max(window, anchor.span), 0.0), anchor.end)
    else:
        raise BadInputError(f"direction must be 'before' or 'after', got {direction!r}")
    return clip_to_video(raw, duration)


def merge_intervals(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted union of intervals, touching or overlapping ones joined."""
    merged: list[Interval] = []
    for iv in sorted(intervals):
        if iv.span <= 0:
            continue
        if merged and iv.start <= merged[-1].end:
            last = merged[-1]
            merged[-1] = Interval(last.start, max(last.end, iv.end))
        else:
            merged.append(iv)
    return merged


def covered_fraction(interval: Interval, zones: Sequence[Interval]) -> float:
    """The share of ``interval`` covered by the union of ``zones`` (0.0 to 1.0)."""
    if interval.span <= 0:
        return 0.0
    covered = sum(interval.overlap(z) for z in merge_intervals(zones))
    return min(1.0, covered / interval.span)
