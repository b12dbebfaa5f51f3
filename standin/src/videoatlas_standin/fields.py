"""What a reply field's name and schema say: the words the fill rules read, and plain values a schema allows.

:mod:`.filler` fills a reply schema field by field. A field's name is read as ordinary usage reads it
(``reasoning`` wants a sentence, ``cells`` ids, ``count`` a number); the word sets here are those
readings, stated once. The rest are the schema's own facts: its simplest value, a run of distinct
values, whether it holds one scalar, which enum member a question states, and what a verdict-like
value says. Nothing here names a video, a prompt or an agent.
"""

from __future__ import annotations

import re
from typing import Any

from videoatlas_standin.language import FUNCTION_WORDS, intent_of, norm, words_of

ANSWER = {"answer", "choice", "option", "selection", "selected", "pick"}
IDS = {"cell", "cells", "id", "ids", "tile", "tiles", "index", "indices", "top"}
COUNT = {"count", "number", "total", "quantity", "many", "occurrences"}
TEXT = {"summary", "reason", "reasoning", "description", "describe", "note", "notes", "why", "explanation", "text"}
TEXT |= {"rationale", "caption", "observation", "observations", "content", "thought", "analysis", "comment"}
TASK = {"task", "plan", "query", "search", "target", "question"}
SUFFICIENT = {"sufficient", "enough", "done", "complete", "answerable", "settled", "conclusive"}
PRESENT = {"found", "visible", "present", "contains", "seen", "shown", "exists"}
LEAVE_OUT = {"erase", "drop", "remove", "discard", "delete", "forget", "ignore"}
SUGGEST = {"explore", "suggest", "suggestions", "next", "revisit", "later"}
AMOUNT = {"num", "size", "amount", "sample", "samples", "density"}
"""Words that say a number is how much to take (``num_...``, ``sample_size``), not an id, a score or an answer."""
CONFIDENCE = {"confidence", "score", "probability", "prob", "certainty", "likelihood"}
TIME = {"time", "timestamp", "start", "end", "second", "seconds", "at", "when", "moment"}
CITE = {"evidence", "labels", "label", "cite", "cites", "cited", "citations", "references", "sources"}
KNOWN = ANSWER | IDS | COUNT | TEXT | TASK | SUFFICIENT | PRESENT | LEAVE_OUT | SUGGEST | CONFIDENCE
KNOWN |= TIME | CITE | {"value", "result", "output", "response", "name", "type", "kind", "string", "item", "items"}
KNOWN |= {"word", "words", "token", "tokens", "reading", "written"}
"""Field words whose meaning the rules below give; a field named by other words asks for something read."""
WORD = {"word", "words", "token", "tokens"}
RAW = WORD | {"text", "content", "string", "reading", "written", "value"}
"""Fields of an item that hold what is written, as written."""
GENERIC = {"value", "result", "output", "response", "reply", "answer"}
"""Names that say only that a value is wanted: the question says which."""


def is_amount(value: Any) -> bool:
    """Whether an enum member is a number (an amount), not a word or a boolean."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def as_written(member: Any) -> Any:
    """An enum member as a schema's grammar writes it: a whole float as an integer (``8.0`` is ``8``)."""
    return int(member) if isinstance(member, float) and member.is_integer() else member


def named_by(name: str, vocabulary: set[str]) -> bool:
    """Whether a field's name holds a word of ``vocabulary`` (``evidence_labels`` is named by :data:`CITE`)."""
    return bool(vocabulary & set(words_of(name)))


def has_own_word(name: str) -> bool:
    """Whether a field's name has a word of its own, beyond the words the fill rules read (``room_number``)."""
    return any(w not in KNOWN and w not in FUNCTION_WORDS and len(w) >= 2 for w in words_of(name))


def is_scalar(node: dict[str, Any]) -> bool:
    """A schema for one string, number or enum member: what a value printed next to a label can fill."""
    kind = node.get("type")
    kinds = set(kind) - {"null"} if isinstance(kind, list) else {kind}
    return "enum" in node or (bool(kinds) and kinds <= {"string", "integer", "number"})


def smallest_value(node: dict[str, Any]) -> Any:
    """The simplest value a schema allows (used only to pad or to stop)."""
    if "const" in node:
        return node["const"]
    if node.get("enum"):
        return node["enum"][0]
    kind = node.get("type")
    kind = next((k for k in kind if k != "null"), "null") if isinstance(kind, list) else kind
    if kind in ("integer", "number"):
        low = node.get("minimum", node["exclusiveMinimum"] + 1 if "exclusiveMinimum" in node else 0)
        return int(low) if kind == "integer" else float(low)
    if kind == "string":
        return "".ljust(int(node.get("minLength", 0)), ".")
    if kind == "boolean":
        return False
    if kind == "array":
        return [smallest_value(node.get("items") or {}) for _ in range(int(node.get("minItems", 0)))]
    if kind == "object" or "properties" in node:
        props = node.get("properties") or {}
        return {k: smallest_value(props[k]) for k in node.get("required", []) if k in props}
    return None


def nth_distinct(node: dict[str, Any], n: int) -> Any:
    """The ``n``-th of a run of different values a schema allows (to pad an array with new items)."""
    kind = node.get("type")
    if node.get("enum"):
        values = node["enum"]
        return values[n % len(values)]
    if kind == "integer":
        return int(node.get("minimum", 0)) + n
    if kind == "number":
        return float(node.get("minimum", 0)) + n
    if kind == "string":
        return f"item {n + 1}"[: int(node["maxLength"])] if "maxLength" in node else f"item {n + 1}"
    return smallest_value(node)


def stated_member(members: list[str], question: str) -> int | None:
    """The enum member the question states word for word (the longest, when several are), if any.

    A member must hold a letter and three characters or more: a lone number or letter in a question
    states nothing about a field.
    """
    said = f" {plain_words(question)} "
    stated = [
        (len(plain_words(m)), -i)
        for i, m in enumerate(members)
        if plain_words(m) and any(ch.isalpha() for ch in plain_words(m))
    ]
    stated = [(n, j) for n, j in stated if n >= 3 and f" {plain_words(members[-j])} " in said]
    return -max(stated)[1] if stated else None


def plain_words(text: str) -> str:
    """Lower-case words and digits of ``text``, one space apart."""
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def polarity_of(value: str) -> str:
    """Whether a verdict-like value says yes, no, or that it is not known (negations read as such)."""
    words = words_of(value)
    if any(w in ("unclear", "unknown", "uncertain", "insufficient", "undetermined", "maybe") for w in words):
        return "unknown"
    if "evidence" in words and any(w in ("no", "without", "lacking") for w in words):
        return "unknown"
    negated = any(w in ("not", "no", "non") for w in words) or any(w.startswith("un") for w in words)
    if any(w.startswith(("contradict", "refut", "against", "false", "wrong", "reject")) for w in words):
        return "no"
    if any(w.startswith(("support", "confirm", "true", "yes", "consistent", "correct")) for w in words):
        return "no" if negated else "yes"
    return "no" if negated else "unknown"


def typed_value(node: dict[str, Any], text: str) -> Any:
    """``text`` as read, typed by the (resolved) schema ``node``.

    A member of an enum by match, an integer from its digits, a string as read; None when it
    cannot take that type (the field is then filled as any other).
    """
    kind = node.get("type")
    kind = next((k for k in kind if k != "null"), "null") if isinstance(kind, list) else kind
    if "enum" in node:
        values = list(node["enum"])
        same = [v for v in values if norm(str(v)) == norm(text)]
        inside = [v for v in values if len(norm(str(v))) >= 2 and norm(str(v)) in {norm(w) for w in text.split()}]
        return (same or inside or [None])[0]
    if kind in ("integer", "number"):
        found = re.search(r"(?<![A-Za-z0-9])-?\d+(?:\.\d+)?" if kind == "number" else r"\d+", text.replace(",", ""))
        if found is None:
            return None
        number: float = float(found.group()) if kind == "number" else int(found.group())
        lo, hi = node.get("minimum"), node.get("maximum")
        if (lo is not None and number < lo) or (hi is not None and number > hi):
            return None
        return number
    if kind == "string":
        return fit_text(text, node)
    return None


def fit_text(text: str, node: dict[str, Any]) -> str:
    """``text`` cut to ``maxLength`` and padded to ``minLength``."""
    if "maxLength" in node:
        text = text[: int(node["maxLength"])]
    return text.ljust(int(node.get("minLength", 0)), ".")


def is_action_enum(node: dict[str, Any]) -> bool:
    """An enum of things to do: most values mean a kind of step, of at least two kinds (not "before/after")."""
    values = [str(v) for v in node.get("enum") or ([node["const"]] if "const" in node else [])]
    if {"before", "after"} <= {v.lower() for v in values}:
        return False
    kinds = [intent_of(v) for v in values]
    known = [k for k in kinds if k is not None]
    return len(known) >= max(1, len(values) // 2) and (len(set(known)) >= 2 or len(values) == 1)
