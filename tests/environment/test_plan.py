from __future__ import annotations

import pytest

from videoatlas.environment.geometry import Interval, grid_for_path
from videoatlas.environment.plan import group_runs, keyframe_inside, plan_frames

pytestmark = pytest.mark.unit

KEYS_10S = [float(t) for t in range(0, 3600, 10)]


def test_keyframe_inside_prefers_the_one_nearest_the_target() -> None:
    assert keyframe_inside(KEYS_10S, Interval(0, 56.25), 28.1) == 30.0
    assert keyframe_inside(KEYS_10S, Interval(12, 19), 15.5) is None  # no keyframe inside
    assert keyframe_inside(KEYS_10S, Interval(10, 11), 10.5) == 10.0  # start is inside
    assert keyframe_inside(KEYS_10S, Interval(9, 10), 9.5) is None  # end is not


def test_root_grid_of_an_hour_snaps_every_cell_to_an_inner_keyframe() -> None:
    grid = grid_for_path(3600.0)
    plan = plan_frames([c.interval for c in grid.cells], keyframes=KEYS_10S)
    assert len(plan.keyframe_targets) == 64 and not plan.runs
    for item in plan.keyframe_targets:
        assert item.keyframe is not None and item.window.contains(item.keyframe)
        assert abs(item.keyframe - item.target) <= 5.0


def test_fine_grid_shares_sequential_passes() -> None:
    grid = grid_for_path(3600.0, (10,))  # cells of 0.88 s, keyframes every 10 s
    plan = plan_frames([c.interval for c in grid.cells], keyframes=KEYS_10S)
    exact = [t for run in plan.runs for t in run]
    assert len(plan.keyframe_targets) + len(exact) == 64
    # 56 s span with keyframes every 10 s: at most one pass per GOP touched, not one per cell.
    assert len(plan.runs) <= 7
    for run in plan.runs:
        times = [t.target for t in run]
        assert times == sorted(times)


def test_runs_split_only_where_a_seek_saves_decoding() -> None:
    from videoatlas.environment.plan import FrameTarget

    targets = [FrameTarget(i, Interval(t - 0.1, t + 0.1), t) for i, t in enumerate([1.0, 2.0, 9.0, 11.0, 35.0])]
    runs = group_runs(targets, KEYS_10S)
    assert [[t.target for t in r] for r in runs] == [[1.0, 2.0, 9.0], [11.0], [35.0]]
    runs = group_runs(targets, None)  # no index: close targets share a pass
    assert [[t.target for t in r] for r in runs] == [[1.0, 2.0], [9.0, 11.0], [35.0]]


def test_exact_only_plans_ignore_keyframes() -> None:
    windows = [Interval(9.9, 10.1)]
    plan = plan_frames(windows, [10.05], KEYS_10S, allow_keyframes=False)
    assert not plan.keyframe_targets and len(plan.runs) == 1


def test_plan_needs_one_target_per_window() -> None:
    with pytest.raises(ValueError):
        plan_frames([Interval(0, 1)], [0.5, 0.6])
