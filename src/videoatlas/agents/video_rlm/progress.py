"""Video-RLM's progress lines: one per event its nodes send while a run streams (``ask`` shows them on stderr)."""

from __future__ import annotations

from typing import Any

from videoatlas.agents import decision
from videoatlas.textsafe import one_line


def describe_event(event: dict[str, Any]) -> str | None:
    """One progress line for a streamed event (None: not one of Video-RLM's, or not worth a line)."""
    kind = event.get("event")
    if kind == "search_task_done":
        return f"search task: {one_line(event['search_task'])}"
    if kind == "traversal":
        return f"traversal: {event['traversal']} ({event['reason']})"
    if kind == "assign":
        return f"round {event['round']}: workers on {', '.join(event['targets'])}"
    if kind == "worker_step":
        mark = "" if event.get("valid", True) else " [invalid]"
        return f"  {event['worker']} step {event['step'] + 1}: {event['note']}{mark}"
    if kind == "worker_done":
        return f"  {event['worker']} done ({event['stop']}): {event['evidence']} evidence in {event['steps']} step(s)"
    if kind == "worker_error":
        return f"  {event['worker']} stopped: {event['error']}"
    if kind == "round_done":
        return (
            f"round {event['round']} done: {event['evidence']} evidence items, {event['covered']:.0%} of the video "
            f"searched ({event['explored']:.0%} without findings), {event['tokens']:,} tokens so far"
        )
    if kind == "uncertainty_done":
        verdict = "sufficient" if event["sufficient"] else "not sufficient"
        return f"uncertainty: {verdict}; {event['hints']} place(s) suggested; {event['erased']} item(s) erased"
    return decision.describe_event(event)
