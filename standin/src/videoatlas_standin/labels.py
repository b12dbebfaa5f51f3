"""What a picture labels: the text read in it as label and value pairs, as signs, forms and boards print them.

A label and a value on one line (``ROOM 12``), a key, a colon and a value (``Name: Ada``), several pairs set apart
by a slash or a bar, a short label right above its value: :func:`labelled` finds these pairs. Which pair a field
wants is decided by what the label means (:mod:`.meaning`), not by its spelling.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from videoatlas_standin.perception import TextLine, Tile

_SEPARATOR = re.compile(r"\s+[/|·•]\s+")
_KEYED = re.compile(r"^\s*([A-Za-z][A-Za-z .#'-]{0,30}?)\s*[:=]\s*(\S.*?)\s*$")
_LABEL_WORD = re.compile(r"^[A-Za-z][A-Za-z'.-]*#?$|^#$")
_NUMBER_WORDS = frozenset({"no", "no.", "nr", "nr.", "num", "num.", "number", "#"})
"""Abbreviations that say "number" after a label (``TICKET NO 12``): part of the label, not of the value."""
_MAX_LABEL_WORDS = 3
_CLAUSE = re.compile(r"\s*[;,]\s+|(?<=[^\s.])\.\s+|\s+[/|·•]\s+")
"""Where a sentence of text parts into clauses (a full stop ending a word, a comma, a semicolon, a bar)."""
WRITTEN = -1
"""The image index of a pair that a text wrote, not a picture."""


@dataclass(frozen=True, slots=True)
class Labelled:
    """A value read in a picture, with the label printed next to it."""

    label: str
    value: str
    image: int
    """Which image of the request it was read in (:data:`WRITTEN` when a text wrote it)."""


def _is_label(text: str) -> bool:
    """A short run of words without digits, as a label is printed (an ending colon allowed)."""
    words = text.strip().rstrip(":").split()
    return 0 < len(words) <= _MAX_LABEL_WORDS and all(_LABEL_WORD.match(w) for w in words)


def split_pair(segment: str) -> tuple[str, str] | None:
    """``KEY: value`` or ``LABEL value`` (a value holding a digit) as (label, value); None when it is neither.

    A short code right before the value (``FLIGHT AB 12``) belongs to it, unless it says "number" (``TICKET NO 12``).
    """
    keyed = _KEYED.match(segment)
    if keyed and not any(ch.isdigit() for ch in keyed.group(1)):
        return keyed.group(1).strip(), keyed.group(2).strip()
    words = segment.split()
    at = next((i for i, w in enumerate(words) if any(ch.isdigit() for ch in w)), None)
    if at is None or at == 0 or at > _MAX_LABEL_WORDS + 1:
        return None
    label, value = words[:at], words[at:]
    if not all(_LABEL_WORD.match(w) for w in label):
        return None
    last = label[-1]
    if len(label) >= 2 and len(last) <= 3 and last.isupper() and last.lower() not in _NUMBER_WORDS:
        label, value = label[:-1], [last, *value]
    return " ".join(label), " ".join(value)


def _below(upper: TextLine, lower: TextLine) -> bool:
    """Whether ``lower`` is printed right under ``upper`` (the next line down, overlapping it across)."""
    gap = lower.y - (upper.y + upper.h)
    across = min(upper.x + upper.w, lower.x + lower.w) - max(upper.x, lower.x)
    return -upper.h / 3 <= gap <= 1.5 * max(upper.h, lower.h) and across > 0


def labelled(tile: Tile) -> list[Labelled]:
    """The label and value pairs a tile's text shows, in reading order."""
    if tile.masked:
        return []
    out: list[Labelled] = []
    paired: set[int] = set()
    for n, line in enumerate(tile.lines):
        for segment in _SEPARATOR.split(line.text):
            pair = split_pair(segment)
            if pair is not None:
                out.append(Labelled(pair[0], pair[1], tile.image))
                paired.add(n)
    for n, upper in enumerate(tile.lines):
        if n in paired or not _is_label(upper.text):
            continue
        under = [m for m, lower in enumerate(tile.lines) if m != n and _below(upper, lower)]
        if under:
            lower = tile.lines[min(under, key=lambda m: tile.lines[m].y)]
            if split_pair(lower.text) is None:
                out.append(Labelled(upper.text.strip().rstrip(":"), lower.text.strip(), tile.image))
    return out


def written_pairs(text: str) -> list[Labelled]:
    """The label and value pairs a text writes ("ROOM: 512", "The plate reads KX-4471."), clause by clause."""
    out: list[Labelled] = []
    for line in text.splitlines():
        for clause in _CLAUSE.split(line):
            pair = split_pair(clause.strip().rstrip(".!?;:,"))
            if pair is not None and pair[1]:
                out.append(Labelled(pair[0], pair[1], WRITTEN))
    return out
