"""Occurrences: evidence records of the same thing at the same time, merged, so a count counts things, not records.

Each evidence record keeps the interval it was seen in (its cell) and what was read there (its
description). The same appearance is often recorded several times: at several zoom levels (a
root cell, then a cell of its grid, then a close-up), by several workers whose targets touch, and in
several rounds. Two records are one occurrence when their intervals overlap (or touch) and their
readings agree. Records are taken finest first, so a coarse cell that spans two appearances seen
apart at a finer level joins one of them (the one holding its frame) and never fuses them.

Plain functions; no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from videoatlas.agents.video_rlm.state.models import found_by
from videoatlas.environment.timefmt import format_ts
from videoatlas.runtime.calls import labelled
from videoatlas.state.models import Evidence

SAME_READING = 0.5
"""Two readings agree when this share of the smaller one's words is in the other (or one has no words)."""
TOUCH_S = 0.05
"""Intervals this close count as touching (one appearance across two neighbouring cells)."""

FINE_RATIO = 1.5
"""A record whose interval is at most this many times the finest member's counts as seen at the same level."""

_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
_MEASURE = re.compile(r"^[\d.,:-]+(?:s|ms|px)?$")


def reading_words(text: str) -> frozenset[str]:
    """The words of a reading that say *what* was seen: case folded, without bare numbers (times, cell ids)."""
    return frozenset(w for w in (m.group(0).casefold() for m in _WORD.finditer(text)) if not _MEASURE.match(w))


def same_reading(a: str, b: str) -> bool:
    """Whether two readings can be of the same thing (see :data:`SAME_READING`)."""
    wa, wb = reading_words(a), reading_words(b)
    if not wa or not wb:
        return True
    return len(wa & wb) >= SAME_READING * min(len(wa), len(wb))


def overlaps(a: tuple[float, float], b: tuple[float, float], touch: float = TOUCH_S) -> bool:
    """Whether two intervals share time (or touch within ``touch`` seconds)."""
    return a[0] <= b[1] + touch and b[0] <= a[1] + touch


@dataclass(slots=True)
class Occurrence:
    """One appearance of something, and the evidence records that saw it."""

    start: float
    end: float
    """Its span: the finest records' intervals, widened to every member's frame."""
    members: list[Evidence] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        """The ids of its records."""
        return [e.id for e in self.members]

    @property
    def reading(self) -> str:
        """What it showed, as its most confident (then finest) record read it."""
        best = max(self.members, key=lambda e: (e.confidence, -(e.end - e.start)))
        return best.description

    @property
    def levels(self) -> int:
        """Distinct zoom levels (interval lengths) it was recorded at."""
        return len({round(e.end - e.start, 3) for e in self.members})

    @property
    def workers(self) -> list[str]:
        """The workers that recorded it."""
        return sorted({found_by(e) for e in self.members})

    def fits(self, item: Evidence) -> bool:
        """Whether ``item`` is seen over this occurrence's span and reads like it."""
        return overlaps((item.start, item.end), (self.start, self.end)) and any(
            same_reading(item.description, m.description) for m in self.members
        )


def occurrences(evidence: Sequence[Evidence]) -> list[Occurrence]:
    """The distinct occurrences among ``evidence``, in time order (finest records first decide the spans)."""
    found: list[Occurrence] = []
    for item in sorted(evidence, key=lambda e: (e.end - e.start, e.time, e.id)):
        matches = [o for o in found if o.fits(item)]
        if not matches:
            found.append(Occurrence(item.start, item.end, [item]))
            continue
        # A coarse record over several appearances seen apart joins the one holding its frame (else the nearest).
        home = min(matches, key=lambda o: (not o.start <= item.time <= o.end, _distance(o, item.time)))
        finest = min(m.end - m.start for m in home.members)
        home.members.append(item)
        # A record as fine as the finest widens the span by its interval (the appearance goes on into the
        # next cell); a coarser one only by its frame, or one root cell would swallow its neighbours.
        lo, hi = (item.start, item.end) if item.end - item.start <= FINE_RATIO * finest else (item.time, item.time)
        home.start, home.end = min(home.start, lo), max(home.end, hi)
    return sorted(found, key=lambda o: (o.start, o.end))


def _distance(occ: Occurrence, t: float) -> float:
    return 0.0 if occ.start <= t <= occ.end else min(abs(occ.start - t), abs(occ.end - t))


def occurrences_block(evidence: Sequence[Evidence]) -> str:
    """One line per occurrence: its span, the labels of its records, how it was seen, and its reading."""
    if not evidence:
        return "(none yet)"
    label_of = {e.id: label for label, e in labelled(evidence)}
    lines = []
    for n, occ in enumerate(occurrences(evidence), start=1):
        labels = "".join(f"[{label_of[i]}]" for i in occ.ids)
        seen = f"{len(occ.members)} record(s), {occ.levels} zoom level(s), {len(occ.workers)} worker(s)"
        lines.append(f"{n}. {format_ts(occ.start, 1)}-{format_ts(occ.end, 1)} {labels} ({seen}): {occ.reading}")
    return "\n".join(lines)
