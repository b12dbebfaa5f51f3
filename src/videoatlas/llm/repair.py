"""Local repair of almost-JSON replies: code fences, text around the object, trailing commas."""

from __future__ import annotations

import re
from collections.abc import Iterator

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def json_events(text: str, start: int = 0) -> Iterator[tuple[str, int, int, int]]:
    """The structure of JSON-like ``text`` from ``start``, string literals respected, as ``(kind, at, end, depth)``.

    ``kind`` is ``open`` or ``close`` (a brace or bracket at ``at``; ``depth``: the nesting after it) or
    ``string`` (a literal from its opening quote at ``at`` to its closing one at ``end``, inside ``depth``
    levels). Nothing is checked: a repair or a reader goes by what it finds.
    """
    depth, in_string, escaped, opened = 0, False, False, 0
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                yield "string", opened, i, depth
        elif ch == '"':
            in_string, opened = True, i
        elif ch in "{[":
            depth += 1
            yield "open", i, i, depth
        elif ch in "}]":
            depth -= 1
            yield "close", i, i, depth


def _outermost_object(text: str) -> str | None:
    """The first balanced ``{...}`` in ``text`` (string literals respected), or None."""
    start = text.find("{")
    while start != -1:
        braces = 0  # brackets aside: a truncated list inside still closes at the object's brace
        for kind, at, _, _ in json_events(text, start):
            if text[at] == "{" and kind == "open":
                braces += 1
            elif text[at] == "}" and kind == "close":
                braces -= 1
                if braces == 0:
                    return text[start : at + 1]
        start = text.find("{", start + 1)
    return None


def repair_json(text: str) -> str | None:
    """A cleaned-up JSON object string, or None when there is nothing object-like to salvage.

    Handles what small models commonly wrap around JSON: Markdown code fences, a sentence before or
    after the object, and trailing commas. It never invents content.
    """
    candidate = text.strip()
    fenced = _FENCE.search(candidate)
    if fenced:
        candidate = fenced.group(1).strip()
    obj = _outermost_object(candidate)
    if obj is None:
        return None
    previous = None
    while previous != obj:
        previous = obj
        obj = _TRAILING_COMMA.sub(r"\1", obj)
    return obj
