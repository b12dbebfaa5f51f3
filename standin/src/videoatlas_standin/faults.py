"""Faults the stand-in can be told to inject, so the client's handling of each is tested over real HTTP.

A chat request's fault is drawn from the server's seeded generator (:func:`draw`); the ones that still send a
reply spoil its content (:func:`corrupt`), the chat route answers the others (:data:`ERRORS`, a hang, a drop).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Mapping
from typing import Any

from videoatlas_standin.contract import Refusal

FAULTS = ("http500", "http429", "hang", "drop", "malformed", "schema", "range")
"""Injectable faults: server error, rate limit, a reply slower than any client timeout, a dropped
connection, JSON cut off mid-way, valid JSON that breaks the schema, and out-of-range cell ids."""
ERRORS = {
    "http500": Refusal(500, "internal error (injected by the stand-in)", "InternalServerError"),
    "http429": Refusal(429, "rate limited (injected by the stand-in)", "RateLimitError"),
    "hang": Refusal(504, "hung (injected by the stand-in)", "TimeoutError"),
}
"""The faults answered with an error (``hang`` after the server's ``hang_s``)."""


def draw(rates: Mapping[str, float], budget: int | None, drawn: Counter[str], rng: random.Random) -> str | None:
    """The fault this request gets (None: none), each tried at its rate in :data:`FAULTS` order.

    ``drawn`` counts the faults injected so far (this one added); once it reaches ``budget``, no more are.
    """
    if budget is not None and sum(drawn.values()) >= budget:
        return None
    for name in FAULTS:
        rate = rates.get(name, 0.0)
        if rate > 0 and rng.random() < rate:
            drawn[name] += 1
            return name
    return None


def corrupt(content: str, fault: str | None, value: Any) -> str:
    """The reply's ``content`` as the fault spoils it (``value`` is the JSON value it encodes)."""
    if fault == "malformed":
        return content[: max(1, len(content) // 2)]
    if fault == "schema":
        return json.dumps({"unexpected": "this object ignores the schema"})
    if fault == "range":
        return json.dumps(_out_of_range(value))
    return content


def _out_of_range(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        changed = {k: _out_of_range(v, k) for k, v in value.items()}
        return changed if changed != value else {**value, "cell": 10_000}
    if isinstance(value, list):
        return [_out_of_range(v, key) for v in value] or ([10_000] if "cell" in key else value)
    if isinstance(value, int) and not isinstance(value, bool) and ("cell" in key or key in ("id", "ids")):
        return 10_000
    return value
