"""Choosing which frame to decode for each cell, before any decoding happens.

For every requested window (a cell's interval) the plan picks the cheapest frame that honestly
lies inside it:

* a keyframe inside the window, the one nearest the target (midpoint): one seek, one decode;
* otherwise the exact frame on screen at the target time. Exact targets are grouped into *runs*
  that share one sequential decoding pass: the next target joins the current run when seeking to
  it would land on a keyframe at or before the previous target, i.e. when a seek would save
  nothing over decoding forward.

Keyframe times are the readers' estimates of when each keyframe is shown (see
:mod:`videoatlas.environment.keyframes`). Backends execute the plan and check every frame's real
presentation time: a keyframe that turns out to be shown outside its window is demoted to an
exact target.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

from videoatlas.environment.geometry import Interval

# Without a keyframe index, targets closer than this share a pass (a typical GOP is 1-10 s).
_NO_INDEX_RUN_GAP_S = 2.0


@dataclass(frozen=True, slots=True)
class FrameTarget:
    """One requested frame: where it must lie, what time to aim for, and a keyframe if one fits."""

    key: int
    window: Interval
    target: float
    keyframe: float | None = None


@dataclass(slots=True)
class FramePlan:
    """Keyframe snaps (each its own seek) and runs of exact targets (each one seek + one pass)."""

    keyframe_targets: list[FrameTarget] = field(default_factory=list)
    runs: list[list[FrameTarget]] = field(default_factory=list)

    @property
    def seeks(self) -> int:
        """How many seeks executing the plan takes (before any demotion)."""
        return len(self.keyframe_targets) + len(self.runs)


def keyframe_inside(keyframes: Sequence[float], window: Interval, target: float) -> float | None:
    """The keyframe in ``[window.start, window.end)`` nearest ``target``, or None."""
    lo = bisect.bisect_left(keyframes, window.start)
    hi = bisect.bisect_left(keyframes, window.end)
    if lo >= hi:
        return None
    i = bisect.bisect_left(keyframes, target, lo, hi)
    candidates = [keyframes[j] for j in (i - 1, i) if lo <= j < hi]
    return min(candidates, key=lambda k: (abs(k - target), k))


def keyframe_at_or_before(keyframes: Sequence[float], t: float) -> float | None:
    """The last keyframe at or before ``t``, or None."""
    i = bisect.bisect_right(keyframes, t)
    return keyframes[i - 1] if i else None


def group_runs(targets: Sequence[FrameTarget], keyframes: Sequence[float] | None) -> list[list[FrameTarget]]:
    """Split exact targets (any order) into time-ordered runs that each need one seek."""
    runs: list[list[FrameTarget]] = []
    for item in sorted(targets, key=lambda x: (x.target, x.key)):
        if runs:
            prev = runs[-1][-1].target
            if keyframes:
                seek_lands = keyframe_at_or_before(keyframes, item.target)
                same_pass = seek_lands is None or seek_lands <= prev
            else:
                same_pass = item.target - prev <= _NO_INDEX_RUN_GAP_S
            if same_pass:
                runs[-1].append(item)
                continue
        runs.append([item])
    return runs


def plan_frames(
    windows: Sequence[Interval],
    targets: Sequence[float] | None = None,
    keyframes: Sequence[float] | None = None,
    allow_keyframes: bool = True,
) -> FramePlan:
    """Plan the decoding of one frame per window; ``targets`` default to the windows' midpoints.

    ``keyframes`` is the sorted list of keyframe times, or None when the container has no index.
    ``allow_keyframes=False`` asks for exact frames everywhere (ZOOM wants the precise moment).
    """
    aims = list(targets) if targets is not None else [w.mid for w in windows]
    if len(aims) != len(windows):
        raise ValueError("one target per window is required")
    plan = FramePlan()
    exact: list[FrameTarget] = []
    for key, (window, aim) in enumerate(zip(windows, aims, strict=True)):
        snap = keyframe_inside(keyframes, window, aim) if (keyframes and allow_keyframes) else None
        if snap is not None:
            plan.keyframe_targets.append(FrameTarget(key, window, aim, snap))
        else:
            exact.append(FrameTarget(key, window, aim))
    plan.keyframe_targets.sort(key=lambda x: (x.keyframe or 0.0, x.key))
    plan.runs = group_runs(exact, keyframes)
    return plan
