"""Walking a JSON schema as a constrained decoder sees it: references, variants, types, bounds.

The policy decides what each field should hold; this module says what the schema allows there. Nothing here knows
what a field means.
"""

from __future__ import annotations

import math
import re
from typing import Any

_MAX_HOPS = 16
"""References followed at most from one node (a cycle of references resolves to an empty schema)."""


class Schema:
    """A root schema, whose ``$ref`` s resolve into its ``$defs`` (or ``definitions``)."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def resolve(self, node: Any) -> dict[str, Any]:
        """``node`` with its ``$ref`` followed and an ``allOf`` merged into it (``{}`` for anything else)."""
        for _ in range(_MAX_HOPS):
            if not isinstance(node, dict):
                return {}
            if "$ref" in node:
                name = str(node["$ref"]).split("/")[-1]
                found = (self.root.get("$defs") or {}).get(name) or (self.root.get("definitions") or {}).get(name)
                node = {**{k: v for k, v in node.items() if k != "$ref"}, **(found or {})}
                continue
            if node.get("allOf"):
                merged = {k: v for k, v in node.items() if k != "allOf"}
                for part in node["allOf"]:
                    merged = {**self.resolve(part), **merged}
                node = merged
                continue
            return node
        return {}

    def variants(self, node: dict[str, Any]) -> tuple[list[dict[str, Any]], bool] | None:
        """The non-null variants of an ``anyOf``/``oneOf`` (resolved) and whether ``null`` is one of them."""
        for key in ("anyOf", "oneOf"):
            if isinstance(node.get(key), list):
                options = [self.resolve(option) for option in node[key]]
                kept = [option for option in options if kind(option) != "null"]
                return kept, len(kept) < len(options)
        return None

    def discriminator(self, variants: list[dict[str, Any]]) -> str | None:
        """The property every variant fixes to a value of its own (a ``const`` or a one-member ``enum``)."""
        if len(variants) < 2:
            return None
        first = variants[0].get("properties") or {}
        for key in map(str, first):
            tags = [tag_of(self.resolve((v.get("properties") or {}).get(key)), None) for v in variants]
            if all(t is not None for t in tags) and len({repr(t) for t in tags}) == len(tags):
                return key
        return None


def tag_of(node: dict[str, Any], default: Any) -> Any:
    """The one value ``node`` allows (its ``const``, or its enum's only member), else ``default``."""
    if "const" in node:
        return node["const"]
    members = node.get("enum")
    return members[0] if isinstance(members, list) and len(members) == 1 else default


def kind(node: dict[str, Any]) -> str:
    """The JSON type a node asks for (the first non-null one of a list; inferred when none is named)."""
    given = node.get("type")
    if isinstance(given, list):
        given = next((t for t in given if t != "null"), "null")
    if isinstance(given, str):
        return given
    if "properties" in node:
        return "object"
    if "items" in node:
        return "array"
    members = node.get("enum") or ([node["const"]] if "const" in node else [])
    if members:
        return {bool: "boolean", int: "integer", float: "number", str: "string"}.get(type(members[0]), "string")
    return "string" if node else "object"


def nullable(node: dict[str, Any]) -> bool:
    """Whether the node's own ``type`` list allows ``null``."""
    given = node.get("type")
    return isinstance(given, list) and "null" in given


def items_bounds(node: dict[str, Any]) -> tuple[int, int | None]:
    """An array's ``minItems`` and ``maxItems`` (None: no upper bound)."""
    most = node.get("maxItems")
    return int(node.get("minItems") or 0), int(most) if isinstance(most, int) else None


def number_in(value: float, node: dict[str, Any], integer: bool) -> float | int | None:
    """``value`` as the node's type when its bounds allow it, else None (a read value is never moved)."""
    if integer:
        if value != int(value):
            return None
        value = int(value)
    low, high = node.get("minimum"), node.get("maximum")
    above, below = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
    if (low is not None and value < low) or (high is not None and value > high):
        return None
    if (above is not None and value <= above) or (below is not None and value >= below):
        return None
    step = node.get("multipleOf")
    if step and not math.isclose(value / step, round(value / step)):
        return None
    return value


def least_number(node: dict[str, Any], integer: bool) -> float | int:
    """The number a field holds when nothing was read for it: its minimum, else 0, moved inside its bounds."""
    low, high = node.get("minimum"), node.get("maximum")
    above, below = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
    value = float(low) if low is not None else 0.0
    if high is not None and value > high:
        value = float(high)
    if above is not None and value <= above:
        value = math.floor(above) + 1.0 if integer else (above + below) / 2 if below is not None else above + 1.0
    if below is not None and value >= below:
        floor = above if above is not None else low if low is not None else below - 2.0
        value = math.ceil(below) - 1.0 if integer else (floor + below) / 2
    return int(value) if integer else value


def string_in(text: str, node: dict[str, Any]) -> str | None:
    """``text`` cut to ``maxLength`` and padded to ``minLength``; None when its ``pattern`` refuses it."""
    most, least = node.get("maxLength"), int(node.get("minLength") or 0)
    if isinstance(most, int) and len(text) > most:
        text = text[:most]
    text = text.ljust(least)
    pattern = node.get("pattern")
    if isinstance(pattern, str) and re.search(pattern, text) is None:
        return None
    return text
