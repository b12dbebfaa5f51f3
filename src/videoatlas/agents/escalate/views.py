"""How an escalating run reads back: which path answered, the uniform answer and its confidence, each path's cost."""

from __future__ import annotations

from typing import Any

from videoatlas.agents.escalate.look import LOOKED_EVENT
from videoatlas.state.models import Cost


def _cost(cost: Cost | None) -> dict[str, Any] | None:
    return None if cost is None else cost.summary()


def extras(state: dict[str, Any]) -> dict[str, Any]:
    """Which path the run took (``escalated``), the uniform answer and its confidence, each path's cost.

    The search agent's own extras (Video-RLM's search task, an index's size) come along when it ran.
    """
    return {
        **(state.get("search_extras") or {}),
        "escalated": bool(state.get("escalated")),
        "search_agent": state.get("search_agent") or None,
        "uniform_answer": state.get("uniform_answer", ""),
        "uniform_answer_index": state.get("uniform_answer_index"),
        "uniform_confidence": state.get("uniform_confidence"),
        "path_costs": {"uniform": _cost(state.get("uniform_cost")), "search": _cost(state.get("search_cost"))},
    }


def describe_event(event: dict[str, Any]) -> str | None:
    """``uniform pass: p 0.62 (threshold 0.70), handing over...`` or ``... answer kept``; None for other events."""
    if event.get("event") != LOOKED_EVENT:
        return None
    confidence, below = event.get("confidence"), float(event.get("below") or 0.0)
    sure = "no probability" if confidence is None else f"p {float(confidence):.2f}"
    if event.get("escalated"):
        return f"uniform pass: {sure} (threshold {below:.2f}), handing over to the search agent"
    return f"uniform pass: {sure} >= {below:.2f}, answer kept"
