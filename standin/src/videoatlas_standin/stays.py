"""Separate appearances of a thing over time: which sightings are one stay on screen.

A count asks how many times something came up, so sightings must be grouped into stays. Two rules
join them; nothing here names a video, a prompt or an agent:

* sightings whose spans touch (within :data:`.policy.SAME_SPAN_S`: written values are rounded) are
  one stay, as are consecutive grid cells showing the thing (the run a sighting brings with it);
* two moments seen in pictures, the later within :data:`.policy.IMMEDIATE_S` of the earlier, are one
  stay when the pictures also look where the thing is absent (a timed frame of the request lacks it)
  and no such frame lies between the two. Frames in time order that show the thing, then the thing
  again seconds later with nothing between, are read as it staying on screen, as anyone reads a
  strip of frames. A set of frames that all show the thing is a selection, not a look at the video:
  it says nothing of what lay between, and each of its moments stays apart unless their spans touch.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Sighted:
    """One sighting's stretch of video, with the first and last moments a picture showed the thing (None: written)."""

    start: float
    end: float
    seen_from: float | None = None
    seen_to: float | None = None


def stays(sightings: list[Sighted], absent: list[float], touch: float, reach: float) -> list[tuple[float, float]]:
    """The separate stays, in time order, from ``sightings`` and the ``absent`` moments (frames lacking the thing).

    ``touch`` is how close two spans must come to be one; ``reach`` how far apart two moments seen in
    pictures may lie and still be one stay when no absent moment lies between them.
    """
    merged: list[Sighted] = []
    for s in sorted(sightings, key=lambda s: (s.start, s.end)):
        last = merged[-1] if merged else None
        if last is not None and (s.start <= last.end + touch or _unbroken(last, s, absent, reach)):
            last.end = max(last.end, s.end)
            if s.seen_to is not None:  # a merged stay is only ever bridged from its last moment seen
                last.seen_to = s.seen_to if last.seen_to is None else max(last.seen_to, s.seen_to)
        else:
            merged.append(Sighted(s.start, s.end, s.seen_from, s.seen_to))
    return [(m.start, m.end) for m in merged]


def _unbroken(before: Sighted, after: Sighted, absent: list[float], reach: float) -> bool:
    """Whether the thing seen last at ``before.seen_to`` and again at ``after.seen_from`` stayed on screen."""
    if before.seen_to is None or after.seen_from is None or not absent:
        return False
    a, b = before.seen_to, after.seen_from
    return 0 <= b - a <= reach and not any(a < t < b for t in absent)
