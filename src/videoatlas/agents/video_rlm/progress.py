"""Video-RLM's progress lines: one per event its nodes send while a run streams (``ask`` shows them on stderr)."""

from __future__ import annotations

from typing import Any

from videoatlas.agents import decision
from videoatlas.textsafe import model_words, one_line

TRAVERSALS = {"bfs": "breadth-first (BFS)", "dfs": "depth-first (DFS)"}


def _search_task_line(event: dict[str, Any]) -> str:
    """The search task as decided: the model's words, quoted, or the question itself; the relation it asks about."""
    relation = one_line(str(event.get("relation") or ""))
    tail = f"; relation: {relation}" if relation else ""
    if event.get("by") == "question":
        return f"search task: the question itself (the model gave none){tail}"
    if "by" not in event:  # an event from before the task and its relation were sent apart
        return f"search task: {model_words(str(event['search_task']))}"
    return f"search task (the model's words): {model_words(str(event['search_task']))}{tail}"


def _traversal_line(event: dict[str, Any]) -> str:
    """What was decided and by whom: the user's flag, the model's choice with its reason quoted, or the default."""
    name = TRAVERSALS.get(str(event["traversal"]), str(event["traversal"]))
    by = event.get("by")
    if by == "user":
        return f"traversal: {name}, set by --traversal"
    if by == "default":
        return f"traversal: {name}, the default ({one_line(str(event.get('reason') or ''))})"
    reason = model_words(str(event.get("reason") or ""))
    return f"traversal: {name}, the model's choice" + (f"; its reason: {reason}" if reason else "")


def describe_event(event: dict[str, Any]) -> str | None:
    """One progress line for a streamed event (None: not one of Video-RLM's, or not worth a line)."""
    kind = event.get("event")
    if kind == "search_task_done":
        return _search_task_line(event)
    if kind == "traversal":
        return _traversal_line(event)
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
