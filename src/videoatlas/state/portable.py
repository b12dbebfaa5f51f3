"""Which JSON-schema keywords a reply schema may use so that every vLLM backend accepts and enforces it.

vLLM constrains ``response_format`` with one of its structured-output backends: ``xgrammar``,
``guidance`` (llguidance), or ``auto`` (xgrammar, falling back to guidance when vLLM's own feature
check says xgrammar cannot take the schema). A keyword one backend refuses fails the request with
HTTP 400 (``uniqueItems``: llguidance answers "Unimplemented keys"); a keyword a backend compiles but
does not enforce lets through replies the schema forbids. So a schema we send uses only the
constraint keywords below, each of which both backends enforce (tests/llm/test_schema_backends.py
decodes a violating instance of each under both), plus annotations that constrain nothing.
Whatever cannot be said this way (distinct list items, rules across fields) is checked after
parsing by the code that reads the reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

CONSTRAINTS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "enum",
        "const",
        "anyOf",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "$ref",
        "$defs",
    }
)
"""Keywords both llguidance and xgrammar compile and enforce."""

ANNOTATIONS = frozenset({"title", "description", "default", "examples"})
"""Keywords that constrain nothing, which every backend may ignore."""

_SCHEMA_MAPS = frozenset({"properties", "$defs"})
"""Keywords whose value maps names to subschemas (the names are not keywords)."""

_XGRAMMAR_FORMATS = frozenset(
    {
        "email",
        "date",
        "time",
        "date-time",
        "duration",
        "ipv4",
        "ipv6",
        "hostname",
        "uuid",
        "uri",
        "uri-reference",
        "uri-template",
        "json-pointer",
        "relative-json-pointer",
    }
)


def unportable(schema: Any) -> list[str]:
    """Where ``schema`` uses a keyword outside :data:`CONSTRAINTS` and :data:`ANNOTATIONS` (``path: keyword``)."""
    return [
        f"{path or '/'}: {key}"
        for path, key in _keywords(schema, "")
        if key not in CONSTRAINTS and key not in ANNOTATIONS
    ]


def keywords_used(schema: Any) -> set[str]:
    """Every keyword ``schema`` uses, at any depth."""
    return {key for _, key in _keywords(schema, "")}


def _keywords(node: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _keywords(item, f"{path}/{i}")
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        yield path, key
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                yield from _keywords(sub, f"{path}/{key}/{name}")
        elif key in ("enum", "const", "default", "examples", "required"):
            continue  # values, not subschemas
        else:
            yield from _keywords(value, f"{path}/{key}")


def xgrammar_unsupported(schema: Any) -> str | None:
    """The first feature vLLM's xgrammar backend declines (vLLM then falls back to guidance under ``auto``).

    These are the combinations vLLM 0.33 itself checks before handing a schema to xgrammar
    (``has_xgrammar_unsupported_json_features``), restated here so the stand-in can choose a backend
    the way vLLM does; ``None`` when xgrammar would be tried.
    """
    for node in _subschemas(schema):
        types = _types(node)
        if types & {"integer", "number"} and "multipleOf" in node:
            return "multipleOf"
        if "array" in types:
            for key in ("uniqueItems", "contains", "minContains", "maxContains"):
                if key in node:
                    return key
        if "string" in types:
            if "format" in node and node["format"] not in _XGRAMMAR_FORMATS:
                return f"format {node['format']!r}"
            if ("pattern" in node or "format" in node) and ("minLength" in node or "maxLength" in node):
                return "a pattern or format with a length bound"
        if "object" in types:
            names = node.get("propertyNames")
            if names is not None and (
                (
                    isinstance(names, dict)
                    and ("pattern" in names or "format" in names)
                    and ("minLength" in names or "maxLength" in names)
                )
                or "patternProperties" in node
                or "properties" in node
                or node.get("unevaluatedProperties", True) is not True
            ):
                return "propertyNames with other object keywords"
            patterns = node.get("patternProperties")
            if isinstance(patterns, dict) and ("properties" in node or len(patterns) > 1):
                return "patternProperties with properties"
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) >= 2:
            return "allOf with several branches"
    return None


def guidance_unsupported(schema: Any) -> str | None:
    """The feature vLLM will not hand to llguidance under ``auto`` (``patternProperties``), or None."""
    return next(("patternProperties" for node in _subschemas(schema) if "patternProperties" in node), None)


def _types(node: dict[str, Any]) -> set[str]:
    kind = node.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    return set()


def _subschemas(node: Any) -> Iterator[dict[str, Any]]:
    """Every dict inside ``node``, itself first (vLLM's checks walk all of them alike)."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _subschemas(value)
    elif isinstance(node, list):
        for item in node:
            yield from _subschemas(item)
