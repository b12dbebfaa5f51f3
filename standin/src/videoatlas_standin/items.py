"""Items the request lists by number, each with a stretch of video.

A schema may ask for one field per listed item (``segment_12`` for the line "stretch 12: 01:00-02:00"):
the text beside each number says where the item lies in the video, and each field is judged on the
frames shown inside that stretch (:meth:`.answers.Answers.tile_within`); a choice of one item by id
takes the best-scored when nothing in view ranks them (:func:`listed_scores`). The rules read the
listing's shape (a number, then a time span, a score written after the ordinary word for one); they name
no word of any prompt.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from videoatlas_standin.language import time_spans

_KEY = re.compile(r"^([A-Za-z]+)_(\d+)$")
"""A field named by a word and a number (``segment_12``, ``option_3``)."""
_LISTED = re.compile(r"^\W*(?:[A-Za-z]+\s+)?#?(\d+)\s*[:.)\]](?=\s|$)")
"""A line that starts by numbering an item ("stretch 12:", "3.", "#4)", "[5]"; not a time such as "3.5 s")."""
_SCORED = re.compile(r"\b(?:score|relevance|rating)\s*[:=]?\s*(\d*\.\d+|\d+)\b", re.IGNORECASE)
"""The score a numbered line gives its item ("score 0.82", "relevance: 7")."""


def keyed_items(props: dict[str, Any], resolve: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, int]:
    """The fields of an object that stand one per numbered item (two or more, one word before the number, objects).

    Returns each such field's item number; an object whose fields are not of that kind gives nothing.
    """
    found = {key: m for key in props if (m := _KEY.match(key)) is not None}
    if len(found) < 2 or len({m.group(1).lower() for m in found.values()}) != 1:
        return {}
    if not all(resolve(props[key]).get("type") == "object" for key in found):
        return {}
    return {key: int(m.group(2)) for key, m in found.items()}


def _lines(text: str) -> list[tuple[int, str]]:
    """The numbered lines of ``text``, with their numbers, in order."""
    out = []
    for line in text.splitlines():
        m = _LISTED.match(line)
        if m is not None:
            out.append((int(m.group(1)), line))
    return out


def listed_spans(text: str) -> dict[int, tuple[float, float]]:
    """Each numbered item's stretch of video: the first time span on the first line that numbers it."""
    out: dict[int, tuple[float, float]] = {}
    for number, line in _lines(text):
        spans = time_spans(line)
        if spans and number not in out:
            out[number] = spans[0]
    return out


def listed_scores(text: str) -> dict[int, float]:
    """Each numbered item's score, as the first line that numbers it with one gives it."""
    out: dict[int, float] = {}
    for number, line in _lines(text):
        scored = _SCORED.search(line)
        if scored is not None and number not in out:
            out[number] = float(scored.group(1))
    return out
