"""JSON asked for in words: the schema a request describes in its text when it sends none.

When a request (no ``response_format``, no tool call) names JSON, the stand-in writes an object whose keys are a
JSON example's in the text (values that are not JSON, such as ``<letter>``, read as strings), else the quoted names
in a sentence about keys or fields, else one ``answer`` key. Values are typed as the example's; a one-letter value
(or letters joined by ``|``) stands for a choice's letter, words joined by ``|`` for one of them.
"""

from __future__ import annotations

import json
import re
from typing import Any

_JSON = re.compile(r"\bjson\b", re.IGNORECASE)
_KEYS_SENTENCE = re.compile(r"[^.\n]*\b(?:keys?|fields?|properties|attributes)\b[^.\n]*", re.IGNORECASE)
_QUOTED_NAME = re.compile(r"[\"'`“‘]([A-Za-z_][A-Za-z0-9_ -]{0,40})[\"'`”’]")
_PAIR = re.compile(r"\"([^\"]+)\"\s*:\s*")
_LETTERS = re.compile(r"^\s*[A-J](?:\s*[|/,]\s*[A-J])*\s*$")
_DEFAULT_KEY = "answer"


def asked_schema(texts: list[str], letters: int) -> dict[str, Any] | None:
    """The schema of the JSON object asked for in words (None: none), ``letters`` the lettered choices offered."""
    text = "\n".join(texts)
    if not _JSON.search(text):
        return None
    for block in _objects(text):
        schema = _from_example(block, letters)
        if schema is not None and schema.get("properties"):
            return schema
    names: list[str] = []
    for sentence in _KEYS_SENTENCE.findall(text):
        names += [n for n in _QUOTED_NAME.findall(sentence) if n.lower() != "json" and n not in names]
    return _object({name: {"type": "string"} for name in names or [_DEFAULT_KEY]})


def _object(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _objects(text: str) -> list[str]:
    """The outermost ``{...}`` blocks of ``text``, in order."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                out.append(text[start : i + 1])
    return out


def _from_example(block: str, letters: int) -> dict[str, Any] | None:
    try:
        return _schema_of(json.loads(block), letters)  # a block of JSON is an object
    except json.JSONDecodeError:
        # Not JSON (placeholders in angle brackets, comments): its keys, each a string.
        keys = list(dict.fromkeys(_PAIR.findall(block)))
        return _object({k: {"type": "string"} for k in keys}) if keys else None


def _schema_of(value: Any, letters: int) -> dict[str, Any]:
    """A schema for values shaped like the example ``value``."""
    if isinstance(value, dict):
        return _object({str(k): _schema_of(v, letters) for k, v in value.items()})
    if isinstance(value, list):
        return {"type": "array", "items": _schema_of(value[0], letters) if value else {"type": "string"}}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str) and letters >= 2 and _LETTERS.match(value):
        return {"type": "string", "enum": [chr(ord("A") + i) for i in range(letters)]}
    options = [o.strip() for o in value.split("|")] if isinstance(value, str) else []
    if len(options) >= 2 and all(len(o) >= 2 for o in options) and len(set(options)) == len(options):
        return {"type": "string", "enum": options}  # "none|after|before": one of these, as written
    return {"type": "string"}
