"""EEA's arithmetic, free of I/O: anchors from retrieval hits, frames for a segment, its children, fused rewards.

* :func:`cluster_anchors`: hits close in time form a cluster; each cluster's best hit is an anchor.
* :func:`coverage_frames`: frames added to fixed ones so the longest stretch of the segment's grid left
  far from every frame is as short as it can be (exact, by a search over the possible radii).
* :func:`gallop_frames`: frames for the window a time relation names beside its anchor, each twice as far
  from the anchor as the one before, so the moments nearest the anchor are seen most finely.
* :func:`children`: the frames split the segment into consecutive children that tile it.
* :func:`query_score`, :func:`fuse`: the paper's query score (a log-mean-exp over the anchors in a
  segment) and its uncertainty-aware fusion with the VLM's reward.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

GRID = 64
"""Moments a segment is discretised into (the middles of equal parts) for the coverage objective."""
_EPS = 1e-6


def cluster_anchors(hits: Sequence[tuple[float, float]], gap_s: float) -> list[tuple[float, float]]:
    """(time, similarity) anchors: hits sorted in time, split where two are more than ``gap_s`` apart.

    Hits at one moment (found by several queries) count once, with their best similarity.
    """
    best: dict[float, float] = {}
    for t, phi in hits:
        key = round(float(t), 3)
        best[key] = max(phi, best.get(key, -math.inf))
    anchors: list[tuple[float, float]] = []
    cluster: list[tuple[float, float]] = []
    for t in sorted(best):
        if cluster and t - cluster[-1][0] > gap_s:
            anchors.append(max(cluster, key=lambda h: (h[1], -h[0])))
            cluster = []
        cluster.append((t, best[t]))
    if cluster:
        anchors.append(max(cluster, key=lambda h: (h[1], -h[0])))
    return anchors


def grid(start: float, end: float, n: int = GRID) -> list[float]:
    """``n`` moments evenly inside ``[start, end]``: the middles of ``n`` equal parts."""
    step = (end - start) / n
    return [start + (i + 0.5) * step for i in range(n)]


def radius(points: Sequence[float], frames: Sequence[float]) -> float:
    """The largest distance from a point to its nearest frame (infinite with no frame)."""
    if not frames:
        return math.inf
    return max((min(abs(p - f) for f in frames) for p in points), default=0.0)


def _centres_needed(points: Sequence[float], fixed: Sequence[float], r: float) -> list[float]:
    """The fewest of ``points`` that, with ``fixed``, leave no point farther than ``r`` (greedy; exact in 1-D)."""
    uncovered = [p for p in points if all(abs(p - f) > r + _EPS for f in fixed)]
    chosen: list[float] = []
    i = 0
    while i < len(uncovered):
        left = uncovered[i]
        # The rightmost candidate within r of the leftmost uncovered point covers the most to its right.
        centre = max(p for p in points if p <= left + r + _EPS)
        chosen.append(centre)
        while i < len(uncovered) and abs(uncovered[i] - centre) <= r + _EPS:
            i += 1
    return chosen


def coverage_frames(points: Sequence[float], fixed: Sequence[float], n: int) -> list[float]:
    """``n`` moments of ``points`` that, added to ``fixed``, minimise the largest distance to a frame.

    The smallest radius any choice reaches is one of the distances between a point and a candidate
    (or a fixed frame): those are tried in order, and for each a greedy sweep finds the fewest new
    frames that reach it. Frames left over once the radius is met go to the middles of the widest
    remaining gaps, so exactly ``min(n, free points)`` frames come back, sorted.
    """
    points = sorted(set(points))
    taken = {round(f, 6) for f in fixed}
    free = [p for p in points if round(p, 6) not in taken]
    n = min(n, len(free))
    if n <= 0:
        return []
    radii = sorted({abs(p - c) for p in points for c in [*points, *fixed]})
    chosen: list[float] = []
    lo, hi = 0, len(radii) - 1
    while lo <= hi:  # the smallest radius that n new frames can reach
        mid = (lo + hi) // 2
        need = _centres_needed(points, fixed, radii[mid])
        if len(need) <= n:
            chosen, hi = need, mid - 1
        else:
            lo = mid + 1
    chosen = sorted({round(c, 6): c for c in chosen if round(c, 6) not in taken}.values())
    while len(chosen) < n:  # spare frames: where they widen coverage most, never making it worse
        have = sorted([*fixed, *chosen])
        spare = [p for p in free if p not in chosen]
        chosen.append(max(spare, key=lambda p: (min(abs(p - f) for f in have), -p)))
        chosen.sort()
    return chosen


def expansion_frames(
    start: float, end: float, anchors: Sequence[tuple[float, float]], b: int, b_s: int, apart: float = 0.0
) -> tuple[list[float], list[float]]:
    """The B frames of a segment: its ``b_s`` best anchors, then coverage frames. Returns (anchor times, all).

    Anchors are taken best first, each more than ``apart`` seconds from those taken before; a closer one
    is passed over for the next best. EEA passes twice its cluster gap: two clusters of hits that close
    lie in neighbouring clips, as the two ends of one 20 s showing do (eleven seconds apart, split by a
    dip in similarity between them), and two anchor frames there see one showing twice while another,
    matched almost as well, is not seen at all. Anchors farther apart are taken as the paper takes them,
    by similarity alone (a needle in a five-minute programme has its best anchors minutes apart inside it).
    A slot no anchor fills goes to coverage; an anchor passed over stays an anchor of the child it lies in.
    """
    inside = [a for a in anchors if start + _EPS < a[0] < end - _EPS]
    fixed: list[float] = []
    for t, _ in sorted(inside, key=lambda a: (-a[1], a[0])):
        if len(fixed) >= b_s:
            break
        if all(abs(t - f) > apart for f in fixed):
            fixed.append(t)
    fixed.sort()
    added = coverage_frames(grid(start, end), fixed, b - len(fixed))
    return fixed, sorted([*fixed, *added])


def gallop_frames(start: float, end: float, b: int, from_end: bool) -> list[float]:
    """``b`` frames in ``[start, end]`` at distances W/2^b, W/2^(b-1), ..., W/2 from the anchor's side.

    The anchor sits at ``start`` ("right after") or at ``end`` (``from_end``: "just before"). What comes
    next to it is the answer, but how long the anchor itself stays on screen is not known, so no even
    spacing suits every video: doubling the distance keeps the first look seconds from the anchor at any
    window length while still reaching the window's far half (an exponential search). The children
    these frames cut double in length too, and any of them can be opened further.
    """
    width = end - start
    if b <= 0 or width <= 0:
        return []
    offsets = [width / 2 ** (b - k) for k in range(b)]
    return sorted(end - d if from_end else start + d for d in offsets)


def children(start: float, end: float, frames: Sequence[float]) -> list[tuple[float, float]]:
    """The consecutive spans ``frames`` cut ``[start, end]`` into (len(frames) + 1 of them)."""
    cuts = [start, *sorted(frames), end]
    return [(cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1)]


def query_score(phis: Sequence[float], tau: float, empty: float) -> float:
    """u(s) = tau * log(mean(exp(phi / tau))) over a segment's anchors; ``empty`` with none."""
    if not phis:
        return empty
    top = max(phis)
    mean = sum(math.exp((phi - top) / tau) for phi in phis) / len(phis)
    return top + tau * math.log(mean)


def normalised_entropy(rewards: Sequence[float], temperature: float) -> float:
    """H of softmax(rewards / temperature), divided by log N (0 for one candidate)."""
    n = len(rewards)
    if n <= 1:
        return 0.0
    top = max(rewards)
    weights = [math.exp((r - top) / temperature) for r in rewards]
    total = sum(weights)
    h = -sum((w / total) * math.log(w / total) for w in weights if w > 0)
    return h / math.log(n)


def fuse(rewards: Sequence[float], scores: Sequence[float], temperature: float) -> tuple[list[float], float]:
    """H = (1 - H) r + H u for each candidate, and H (uncertainty of the rewards over all candidates)."""
    h = normalised_entropy(rewards, temperature)
    return [(1 - h) * r + h * u for r, u in zip(rewards, scores, strict=True)], h
