"""Local repair of almost-JSON replies: code fences, text around the object, trailing commas."""

from __future__ import annotations

import re

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def _outermost_object(text: str) -> str | None:
    """The first balanced ``{...}`` in ``text`` (string literals respected), or None."""
    start = text.find("{")
    while start != -1:
        depth = 0
        in_string = False
        escaped = False
        for i in range(start, len(text)):
            ch = text[i]
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1]
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
