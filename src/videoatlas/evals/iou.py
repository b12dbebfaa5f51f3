"""Temporal IoU: how well the moments an answer cites cover the moments the benchmark marks.

Both sides are sets of intervals (several cited cells, several annotated ranges): each is merged
into a union first, and the IoU is the length of the unions' intersection over the length of
their union.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def merge(intervals: Sequence[Sequence[float]]) -> list[tuple[float, float]]:
    """Sorted, non-overlapping intervals covering the same time (empty and reversed ones dropped)."""
    out: list[tuple[float, float]] = []
    for start, end in sorted((float(s), float(e)) for s, e in intervals if float(e) > float(s)):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _length(intervals: Sequence[tuple[float, float]]) -> float:
    return sum(e - s for s, e in intervals)


def _overlap(a: Sequence[tuple[float, float]], b: Sequence[tuple[float, float]]) -> float:
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, high - low)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def temporal_iou(predicted: Sequence[Sequence[float]], truth: Sequence[Sequence[float]]) -> float:
    """IoU of the union of ``predicted`` and the union of ``truth`` (0 when either covers no time)."""
    a, b = merge(predicted), merge(truth)
    inter = _overlap(a, b)
    union = _length(a) + _length(b) - inter
    return inter / union if union > 0 else 0.0


def row_iou(row: dict[str, Any]) -> float | None:
    """A result's IoU between its cited ranges and the question's annotated ranges.

    None when the question has no annotated range, or the row predates cited ranges being kept; a
    failed run, or an answer that cited nothing, scores 0 (it pointed at no moment).
    """
    truth = row.get("truth_ranges") or []
    if not truth:
        return None
    if row.get("status") != "ok":
        return 0.0
    if "cited_ranges" not in row:
        return None
    return temporal_iou(row["cited_ranges"], truth)
