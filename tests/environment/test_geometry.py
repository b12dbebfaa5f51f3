from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from videoatlas.environment.geometry import (
    Interval,
    access_depth,
    auto_max_depth,
    cell_containing,
    cell_interval,
    cell_span,
    covered_fraction,
    format_path,
    grid_for_path,
    grid_over,
    investigate_interval,
    merge_intervals,
    parse_path,
    path_at,
    path_for_interval,
    split_interval,
)
from videoatlas.errors import BadInputError

pytestmark = pytest.mark.unit

durations = st.floats(min_value=0.5, max_value=48 * 3600, allow_nan=False, allow_infinity=False)
ks = st.integers(min_value=2, max_value=10)


@st.composite
def duration_k_path(draw: st.DrawFn) -> tuple[float, int, tuple[int, ...]]:
    k = draw(ks)
    depth = draw(st.integers(min_value=0, max_value=3))
    path = tuple(draw(st.integers(0, k * k - 1)) for _ in range(depth))
    return draw(durations), k, path


def assert_tiles(cells: list[Interval], whole: Interval) -> None:
    assert cells[0].start == whole.start
    assert cells[-1].end == whole.end
    for a, b in itertools.pairwise(cells):
        assert a.end == b.start  # exactly: no gap, no overlap
        assert a.span > 0


@settings(max_examples=300, deadline=None)
@given(duration_k_path())
def test_expanded_grid_tiles_its_cell_exactly(case: tuple[float, int, tuple[int, ...]]) -> None:
    duration, k, path = case
    grid = grid_for_path(duration, path, k)
    parent = cell_interval(duration, path, k)
    assert grid.interval == parent
    assert len(grid.cells) == k * k
    assert_tiles([c.interval for c in grid.cells], parent)
    assert grid.depth == len(path)
    for c in grid.cells:
        assert c.path == (*path, c.index)
        assert cell_interval(duration, c.path, k) == c.interval


@settings(max_examples=300, deadline=None)
@given(duration_k_path())
def test_path_round_trips_through_interval_and_text(case: tuple[float, int, tuple[int, ...]]) -> None:
    duration, k, path = case
    iv = cell_interval(duration, path, k)
    assert path_for_interval(duration, iv, k, tol=max(1e-9, iv.span * 1e-6)) == path
    assert parse_path(format_path(path), k) == path


@settings(max_examples=200, deadline=None)
@given(durations, ks, st.integers(0, 3), st.floats(0, 1))
def test_path_at_finds_the_cell_holding_a_time(duration: float, k: int, depth: int, frac: float) -> None:
    t = duration * frac
    path = path_at(duration, t, depth, k)
    assert len(path) == depth + 1
    iv = cell_interval(duration, path, k)
    assert iv.start <= t <= iv.end
    if t < duration:
        assert iv.contains(t)


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1e5), st.floats(1e-3, 1e5), ks)
def test_custom_interval_grid_tiles_exactly(start: float, span: float, k: int) -> None:
    whole = Interval(start, start + span)
    grid = grid_over(whole, k)
    assert grid.path is None and grid.depth is None
    assert_tiles([c.interval for c in grid.cells], whole)


def test_root_cells_end_exactly_at_video_end() -> None:
    for duration in (1.0, 59.94, 3600.0, 36000.0, 12345.678):
        assert grid_for_path(duration).cells[-1].interval.end == duration
        last = (63, 63, 63)
        assert cell_interval(duration, last).end == duration


def test_depth_span_matches_the_paper() -> None:
    # Delta t_d = T / K^(2(d+1)); EXPAND refines by K^2.
    assert cell_span(36000, 0) == pytest.approx(562.5)
    assert cell_span(36000, 1) == pytest.approx(8.7890625)
    assert cell_span(36000, 2) == pytest.approx(0.1373, abs=1e-4)  # the paper's "137 ms" at d=2
    for d in range(4):
        assert grid_for_path(36000, (0,) * d).cell_span == pytest.approx(cell_span(36000, d))


def test_auto_max_depth_is_first_sub_second_depth() -> None:
    assert auto_max_depth(36000) == 2  # 10 h: 8.8 s at d=1, 0.137 s at d=2
    assert auto_max_depth(3600) == 1  # 1 h: 56 s at d=0, 0.88 s at d=1
    assert auto_max_depth(60) == 0  # 1 min: 0.94 s already at d=0
    assert auto_max_depth(64) == 1  # exactly 1.0 s is not shorter than 1 s
    for duration in (30.0, 600.0, 7200.0, 90000.0):
        d = auto_max_depth(duration)
        assert cell_span(duration, d) < 1.0
        assert d == 0 or cell_span(duration, d - 1) >= 1.0


def test_access_depth() -> None:
    # ceil(log_64(T * fps)): 1 h at 25 fps is 90,000 frames -> 3 levels.
    assert access_depth(3600, 25) == 3
    assert access_depth(60, 1) == 1  # 60 frames fit in one 64-cell grid
    assert access_depth(64, 1) == 1
    assert access_depth(65, 1) == 2
    assert access_depth(36000, 25) == math.ceil(math.log(36000 * 25, 64))


@pytest.mark.parametrize("k", [0, 1, -3])
def test_k_below_two_is_rejected(k: int) -> None:
    with pytest.raises(BadInputError, match="K must be an integer between 2 and 16"):
        grid_for_path(100.0, (), k)
    with pytest.raises(BadInputError):
        split_interval(Interval(0, 10), k)


@pytest.mark.parametrize("text", ["12/x", "1//2/a", "-1", "64", "3/64"])
def test_bad_paths_are_rejected(text: str) -> None:
    with pytest.raises(BadInputError):
        parse_path(text, 8)


def test_out_of_range_cell_ids_are_rejected() -> None:
    with pytest.raises(BadInputError, match="out of range"):
        cell_interval(100.0, (64,), 8)
    with pytest.raises(BadInputError, match="out of range"):
        grid_for_path(100.0, (3, -1), 8)


def test_bad_durations_and_intervals() -> None:
    for bad in (0.0, -5.0, math.inf, math.nan):
        with pytest.raises(BadInputError):
            grid_for_path(bad)
    with pytest.raises(BadInputError, match="ends before it starts"):
        Interval(5, 4)
    with pytest.raises(BadInputError, match="empty"):
        split_interval(Interval(3, 3))
    with pytest.raises(BadInputError, match="outside the video"):
        path_at(100.0, 101.0, 0)
    with pytest.raises(BadInputError, match="not a cell"):
        path_for_interval(100.0, Interval(10.0, 12.0))


def test_parse_path_accepts_root_spellings() -> None:
    assert parse_path("root") == () == parse_path("") == parse_path("/")
    assert parse_path("12/5/40") == (12, 5, 40)
    assert format_path(()) == "root"


def test_cell_containing_boundaries() -> None:
    grid = grid_for_path(640.0)
    assert cell_containing(grid, 0.0).index == 0
    assert cell_containing(grid, 10.0).index == 1  # a boundary belongs to the later cell
    assert cell_containing(grid, 640.0).index == 63  # the end belongs to the last cell


def test_investigate_windows() -> None:
    anchor = Interval(100.0, 110.0)
    after = investigate_interval(1000.0, anchor, "after", k=8)
    assert after == Interval(100.0, 180.0)  # the anchor stays in view as the first row
    before = investigate_interval(1000.0, anchor, "before", window_s=30.0)
    assert before == Interval(80.0, 110.0)
    clipped = investigate_interval(150.0, anchor, "after")
    assert clipped == Interval(100.0, 150.0)
    with pytest.raises(BadInputError, match="nothing lies before"):
        investigate_interval(1000.0, Interval(0.0, 5.0), "before")
    with pytest.raises(BadInputError, match="nothing lies after"):
        investigate_interval(1000.0, Interval(990.0, 1000.0), "after")


def test_merge_and_coverage() -> None:
    zones = [Interval(5, 10), Interval(0, 2), Interval(9, 12), Interval(12, 13)]
    assert merge_intervals(zones) == [Interval(0, 2), Interval(5, 13)]
    assert covered_fraction(Interval(0, 10), zones) == pytest.approx(0.7)
    assert covered_fraction(Interval(20, 30), zones) == 0.0
    assert covered_fraction(Interval(6, 8), zones) == 1.0
