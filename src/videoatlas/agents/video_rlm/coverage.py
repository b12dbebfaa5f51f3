"""How much of the timeline the search has seen, and how finely: the coverage a count or an order rests on.

A worker that looked through a view saw its stretch at one frame per cell: ``(end - start) / K^2``
seconds between frames (its *step*). A thing on screen for at least ``step`` seconds cannot fall
between two of those frames, so a stretch seen at a step no longer than the resolution the question
needs is *covered*; one seen only coarser (the root grid of a long video) is not. Coverage is kept per
stretch at the finest step it was seen at (:func:`merge_coverage`, the state's reducer), and a BFS
question (a count, an order, a first or last) sends workers to what is not covered yet
(:func:`coverage_targets`) rather than reading covered stretches again.

Plain functions over ``(start, end, step)`` triples; no I/O.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from videoatlas.environment.timefmt import format_ts

Seen = tuple[float, float, float]
"""A stretch ``(start, end)`` of video seen with ``step`` seconds between frames."""

_EPS = 1e-6


def merge_coverage(current: Sequence[Seen] | None, update: Sequence[Seen] | None) -> list[Seen]:
    """Both sides' stretches as disjoint, sorted pieces, each at the finest step it was seen at.

    Adjacent pieces at the same step are joined; empty or backwards stretches are dropped. The
    result does not depend on the order of the writes (parallel workers write in any order).
    """
    stretches = [(float(a), float(b), float(s)) for a, b, s in [*(current or []), *(update or [])] if b - a > _EPS]
    if not stretches:
        return []
    cuts = sorted({p for a, b, _ in stretches for p in (a, b)})
    pieces: list[Seen] = []
    for left, right in itertools.pairwise(cuts):
        steps = [s for a, b, s in stretches if a <= left + _EPS and b >= right - _EPS]
        if not steps or right - left <= _EPS:
            continue
        step = min(steps)
        if pieces and abs(pieces[-1][1] - left) <= _EPS and abs(pieces[-1][2] - step) <= _EPS:
            pieces[-1] = (pieces[-1][0], right, pieces[-1][2])
        else:
            pieces.append((left, right, step))
    return pieces


def covered_at(coverage: Sequence[Seen], step: float) -> list[tuple[float, float]]:
    """The stretches seen at ``step`` seconds between frames or finer, merged."""
    out: list[tuple[float, float]] = []
    for start, end, seen_step in merge_coverage(coverage, ()):
        if seen_step > step + _EPS:
            continue
        if out and start <= out[-1][1] + _EPS:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def uncovered(coverage: Sequence[Seen], duration: float, step: float) -> list[tuple[float, float]]:
    """The stretches of ``[0, duration]`` not yet seen at ``step`` or finer."""
    gaps: list[tuple[float, float]] = []
    at = 0.0
    for start, end in covered_at(coverage, step):
        if start > at + _EPS:
            gaps.append((at, min(start, duration)))
        at = max(at, end)
    if duration > at + _EPS:
        gaps.append((at, duration))
    return [(a, b) for a, b in gaps if b - a > _EPS]


def covered_share(coverage: Sequence[Seen], duration: float, step: float) -> float:
    """Share of the video (0-1) seen at ``step`` or finer."""
    if duration <= 0:
        return 0.0
    seen = sum(min(b, duration) - max(a, 0.0) for a, b in covered_at(coverage, step) if b > 0 and a < duration)
    return max(0.0, min(1.0, seen / duration))


def coverage_targets(
    coverage: Sequence[Seen], duration: float, step: float, cells: int, min_span: float = 0.0
) -> list[tuple[float, float]]:
    """The uncovered stretches cut into ranges that one grid of ``cells`` frames shows at ``step`` or finer.

    Each range is at most ``step * cells`` long (so its grid's frames are at most ``step`` apart), and
    a stretch is cut into equal parts (no sliver at its end). Stretches shorter than ``min_span`` (a
    rounding sliver between two covered pieces) are left out.
    """
    longest = step * cells
    out: list[tuple[float, float]] = []
    for start, end in uncovered(coverage, duration, step):
        span = end - start
        if span < min_span:
            continue
        parts = max(1, math.ceil(span / longest - _EPS))
        width = span / parts
        out.extend((start + i * width, start + (i + 1) * width) for i in range(parts))
    return out


def view_step(start: float, end: float, cells: int) -> float:
    """Seconds between the frames of a grid of ``cells`` cells over ``start``-``end`` (one frame per cell)."""
    return (end - start) / max(1, cells)


def coverage_line(coverage: Sequence[Seen], duration: float, step: float) -> str:
    """One line for prompts and traces: the share covered at ``step``, and the first stretches still open."""
    share = covered_share(coverage, duration, step)
    gaps = uncovered(coverage, duration, step)
    text = f"{share:.0%} of the timeline seen with frames at most {step:.3g} s apart"
    if gaps:
        shown = ", ".join(f"{format_ts(a)}-{format_ts(b)}" for a, b in gaps[:4])
        text += f"; not yet at that resolution: {shown}" + (f" and {len(gaps) - 4} more" if len(gaps) > 4 else "")
    return text
