"""What a request's text reports of a grid cell: lines labelled with the ids of cells the picture shows.

Beside a grid of numbered frames, a request may write a line per cell, or per run of cells, about
what the picture cannot show: what was said there, typically (``cell 4: ...``, ``cells 4 to 6:
...``, ``4-6: ...``, ``[4] ...``). A reader takes such a line as part of what it knows of those
cells. A line whose label is not a cell of the picture, or that holds nothing but numbers, times and
marks in brackets (a cell's time span, ``[explored]``), is not one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from videoatlas_standin.perception import Tile

_LABEL = re.compile(
    r"^\s*\[?\s*(?:[^\W\d_]+\s+)?(?P<first>\d{1,4})"
    r"(?:\s*(?:to|through|until|-|–)\s*(?:[^\W\d_]+\s+)?(?P<last>\d{1,4}))?"
    r"\s*(?:\]|:(?!\d))\s*(?P<rest>.*?)\s*$",
    re.IGNORECASE,
)
"""An id label (a word, an id; or a range of ids) and what follows it. ``00:30`` is a time, not a label."""
_WORDS = re.compile(r"[^\W\d_]{2,}")
_MARK = re.compile(r"\[[^\]]*\]")
"""A mark in brackets beside a cell's id (``[explored]``): a note on the cell, not something said in it."""


def said_by_cell(text: str, tiles: Iterable[Tile], skip: Iterable[str] = ()) -> dict[int, str]:
    """The lines of ``text`` labelled with the ids of grid cells among ``tiles``, by id (a range: every id in it).

    ``skip``: texts that are not reports (the answer choices, written after a number as labels).
    """
    cells = {t.cell for t in tiles if t.cell is not None}
    skipped = {s.strip().lower() for s in skip}
    out: dict[int, list[str]] = {}
    for line in text.splitlines():
        found = _LABEL.match(line)
        if found is None:
            continue
        rest = _MARK.sub(" ", found.group("rest")).strip()
        if not _WORDS.search(rest) or rest.lower() in skipped:
            continue
        first = int(found.group("first"))
        last = int(found.group("last") or first)
        if last < first or first not in cells or last not in cells:
            continue
        for cell in range(first, last + 1):
            if cell in cells:
                out.setdefault(cell, []).append(rest)
    return {cell: " ".join(texts) for cell, texts in out.items()}
