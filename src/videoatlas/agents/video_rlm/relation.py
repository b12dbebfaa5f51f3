"""Time relations ("right after", "just before", "between", "first", "last", "how long after") in the search.

The search task records the relation and its anchor (:class:`~.state.models.Relation`); the
uncertainty analysis names the evidence that shows the anchor once it is found; the window the
relation names next to it is searched next (:func:`window_hints`), and the final decision is told
the anchor's time and checked against it (:func:`time_check`, added to its reasoning). Plain
functions; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from videoatlas.agents.video_rlm.schemas import MAX_RANGE_S
from videoatlas.agents.video_rlm.state.models import Anchor, Hint, Relation
from videoatlas.environment.timefmt import format_ts
from videoatlas.state.models import Evidence


def window_hints(relation: Relation, anchor: Anchor, duration: float, k: int) -> list[Hint]:
    """The stretch the relation names beside its anchor, one root cell long (at least ``MAX_RANGE_S``).

    After the anchor for "right after", "how long after" and "between" (from its first anchor), before
    it for "just before"; clipped to the video.
    """
    window = max(MAX_RANGE_S, duration / (k * k))
    if relation.kind == "just before":
        start, end = max(0.0, anchor.start - window), anchor.start
    else:
        start, end = anchor.end, min(duration, anchor.end + window)
    return [Hint(start=start, end=end)] if end - start > 0 else []


def relation_text(relation: Relation, anchor: Anchor | None, labels: Mapping[str, str]) -> str:
    """What the final decision is told about the relation: the relation, and the anchor's time when found.

    ``labels`` maps evidence ids to their labels in the call.
    """
    said = relation.sentence()
    if not said:
        return "(the question asks no time relation)"
    if not relation.anchored:
        return said
    if anchor is None:
        return f"{said} The anchor was not identified in the evidence: say so if the answer depends on it."
    label = labels.get(anchor.evidence, "?")
    return (
        f"{said} The anchor is [{label}] at {format_ts(anchor.time)} ({anchor.time:.1f} s). In the reasoning, give "
        "the chosen answer's time and say on which side of the anchor it lies and how far."
    )


def time_check(relation: Relation, anchor: Anchor | None, cited: Sequence[Evidence]) -> str:
    """A sentence checking the cited evidence's times against the anchor ("" when there is nothing to check).

    The anchor's own evidence is left out; each other cited moment is placed before or after the anchor,
    and the ones on the side the relation rules out are named.
    """
    if anchor is None or not relation.anchored:
        return ""
    others = [e for e in cited if e.id != anchor.evidence]
    if not others:
        return f"Time check: the answer cites no evidence besides the anchor at {format_ts(anchor.time)}."
    want_after = relation.kind != "just before"
    parts, wrong = [], []
    for e in sorted(others, key=lambda e: e.time):
        gap = e.time - anchor.time
        side = "after" if gap > 0 else "before" if gap < 0 else "at"
        parts.append(f"{format_ts(e.time)} is {abs(gap):.1f} s {side} it")
        if (want_after and gap <= 0) or (not want_after and gap >= 0):
            wrong.append(format_ts(e.time))
    text = f"Time check against the anchor at {format_ts(anchor.time)} ({relation.kind}): " + "; ".join(parts) + "."
    if wrong:
        text += f" Cited evidence on the wrong side of the anchor: {', '.join(wrong)}."
    return text
