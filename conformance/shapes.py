"""Request shapes: a request's structure with its content abstracted away, so alike requests are checked as one.

Two JSON bodies have the same shape when they have the same keys, the same schema up to enum values,
descriptions and the like, and the same message and content structure (a run of several images is
one structure). Two forms have the same shape when they send the same field names, the same values of
the fields that choose a behaviour (:data:`FORM_CHOICES`) and files of the same content types.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

# Inside a schema these keys hold values that vary with the question or the grid, not the schema's form.
_SCHEMA_VALUE_KEYS = frozenset({"enum", "const", "description", "title", "default", "examples"})
# Outside a schema only these strings name a structure (or a wire format); every other string is content.
_STRUCTURAL_STRINGS = frozenset({"role", "type", "encoding_format"})


def _shape(value: Any, key: str | None = None, in_schema: bool = False) -> Any:
    """The structure of a request with its content abstracted away (see the module doc)."""
    if key == "schema" or key == "json":
        in_schema = True
    if in_schema and key in _SCHEMA_VALUE_KEYS:
        return f"<{key}>"
    if isinstance(value, dict):
        return {k: _shape(v, k, in_schema) for k, v in sorted(value.items())}
    if isinstance(value, list):
        if in_schema and key == "required":
            return sorted(str(v) for v in value)
        shapes: list[Any] = []
        for item in value:
            s = _shape(item, None, in_schema)
            if not shapes or shapes[-1] != s:  # runs of the same part (several images) are one structure
                shapes.append(s)
        return shapes
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return "<number>"
    if isinstance(value, str):
        if key in _STRUCTURAL_STRINGS or (in_schema and key in {"$ref", "format"}):
            return value
        return "<str>"
    return f"<{type(value).__name__}>"


def shape_key(body: dict[str, Any]) -> str:
    """A short stable id of a request's shape."""
    canonical = json.dumps(_shape(body), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]


FORM_CHOICES = frozenset({"response_format", "timestamp_granularities[]", "language", "stream"})
"""Form fields whose value chooses what the server does; every other field's value is content."""


def form_shape(record: dict[str, Any]) -> dict[str, Any]:
    """The structure of a recorded form request (see the module doc)."""
    fields = sorted(
        (str(name), str(value) if name in FORM_CHOICES else "<str>") for name, value in record.get("form") or []
    )
    files = sorted((str(f.get("field")), str(f.get("content_type"))) for f in record.get("files") or [])
    return {"content_type": record.get("content_type"), "fields": fields, "files": files}


def form_shape_key(record: dict[str, Any]) -> str:
    """A short stable id of a recorded form request's shape."""
    canonical = json.dumps(form_shape(record), sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:10]
