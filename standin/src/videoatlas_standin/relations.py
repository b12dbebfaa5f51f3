"""The reference points of a time relation a question states, as ordinary English writes them.

"What is shown right after the DELAYED sign?" places its answer against "the DELAYED sign";
"between the red banner and the clock" against two. :func:`reference_points` finds the phrase each
relation word governs (up to the end of its clause: a question mark, a comma, or the verb the
question goes on with), and :func:`reference_field` says whether a reply field asks for such a
point (its name or description means a reference point: an anchor, a landmark, what something is
relative to) and which of the two; :func:`member_saying` finds the one member of a list of relations that
says the question's side of its anchor in other words ("straight after" -> "right after"). Nothing here
names a video, a prompt or an agent.
"""

from __future__ import annotations

import re

from videoatlas_standin.language import AFTER, BEFORE, words_of

_RELATION = re.compile(
    r"\b(?:how\s+(?:long|many\s+(?:seconds|minutes))\s+(?:after|before)"
    r"|(?:right|just|immediately|directly|shortly|soon)\s+(?:after|before)"
    r"|after|before|following|preceding|since|prior\s+to|until|between)\s+",
    re.IGNORECASE,
)
"""A word (or words) that places something in time against a reference point named after it."""
_CLAUSE_END = re.compile(
    r"\s*[?,;:!]|\.(?:\s|$)|\s+(?:and\s+then|then|when|while|where|which|that|who)\b"
    r"|\s+(?:is|are|was|were|does|do|did|has|have|had|will|would|can|could|appears?|appeared|shows?|showed|"
    r"comes?|came|happens?|happened|occurs?|occurred|gets?|got)\b",
    re.IGNORECASE,
)
"""Where the phrase a relation word governs ends: punctuation, a clause word, or the question's next verb."""
_REFERENCE = frozenset(
    {"anchor", "anchors", "reference", "landmark", "relative", "pivot", "cue", "marker", "event", "events"}
)
"""Words a field's name or description uses for the point a relation is measured from."""
_DESCRIBED = re.compile(
    r"\b(?:anchor|reference\s+(?:point|moment|event)|landmark|relative\s+to|measured\s+from|counted\s+from)\b",
    re.IGNORECASE,
)
"""How a field's description says it holds a reference point."""
_SECOND = frozenset({"other", "second", "later", "end", "ending", "closing", "latter", "2", "b"})
"""Words that mark the second of two reference points ("between X and Y": Y)."""
_HOW_LONG = re.compile(r"\bhow\s+(?:long|much\s+time|many\s+(?:seconds|minutes|hours))\b", re.IGNORECASE)
"""A question for the length of time between two things, not for a thing."""


def reference_points(question: str) -> list[str]:
    """The phrases the question's time relation is measured from: one, two for "between X and Y", none."""
    match = _RELATION.search(question)
    if match is None:
        return []
    rest = question[match.end() :]
    end = _CLAUSE_END.search(rest)
    governed = rest[: end.start()] if end else rest
    governed = governed.strip().strip("\"'“”‘’")
    if not governed:
        return []
    if match.group(0).strip().lower() == "between":
        parts = re.split(r"\s+and\s+", governed, maxsplit=1)
        return [p.strip() for p in parts if p.strip()]
    return [governed]


def reference_field(name: str, description: str = "") -> int | None:
    """Which reference point a field asks for: 0 the (first) one, 1 the second; None when it asks for none.

    Its name says so (``anchor``, ``landmark_event``, ``relative_to``), or its description does
    ("the moment the answer is measured from").
    """
    named = set(words_of(name))
    if not named & _REFERENCE and not _DESCRIBED.search(description):
        return None
    return 1 if named & _SECOND else 0


def member_saying(members: list[str], side: str, question: str) -> int | None:
    """The index of the one member that says ``side`` ("after" or "before") of an anchor, if one alone does.

    A question reads "straight after the sign" or "right before the banner"; a list of relations says
    "right after" and "just before". The member must place something on the same side, and ask for a
    length of time ("how long after") exactly when the question does. None when no member or several do.
    """
    pattern = AFTER if side == "after" else BEFORE
    length = bool(_HOW_LONG.search(question))
    fits = [i for i, m in enumerate(members) if pattern.search(m) and bool(_HOW_LONG.search(m)) == length]
    return fits[0] if len(fits) == 1 else None
