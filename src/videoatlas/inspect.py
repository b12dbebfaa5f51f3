"""Reading a run back: everything known about it (:func:`load_trace`) and its trace as a tree (``videoatlas trace``).

The HTML views of a run (``videoatlas report``, ``videoatlas ui``) are in :mod:`videoatlas.ui`.
"""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass
from typing import Any

from videoatlas.agents.registry import get_agent, saved_snapshot
from videoatlas.environment.render import evidence_label
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import BadInputError
from videoatlas.llm.records import CANCELLED
from videoatlas.persistence.db import redact_url, resolve_db_url
from videoatlas.persistence.store import TraceStore
from videoatlas.state.models import prefill_text, roles_text
from videoatlas.state.run import probability_note, support_note


def _call_dict(c: Any) -> dict[str, Any]:
    return {
        "node": c.node,
        "worker": c.worker,
        "round": c.round,
        "step": c.step,
        "schema": c.schema,
        "latency_s": round(c.latency_s, 3),
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens,
        "cached_tokens": c.cached_tokens,
        "outcome": c.outcome,
        "attempts": c.attempts,
        "images": c.images,
        "error": c.error,
        "template": c.template,
        "reply_text": c.reply_text,
        "role": c.role,
        "thinking": c.thinking,
        "reasoning": c.reasoning or "",
        "reasoning_tokens": c.reasoning_tokens or 0,
        "reasoning_estimated": bool(c.reasoning_estimated),
    }


def cancelled(error: str | None) -> bool:
    """Whether a node's or a call's error says it was stopped from outside (rows from before ``cancelled`` too)."""
    return bool(error) and (error == CANCELLED or str(error).startswith(("CancelledError", "KeyboardInterrupt")))


def _failure(store: TraceStore, row: Any) -> dict[str, Any] | None:
    """What stopped a run that did not finish: its error, the node and model call that failed, the unusable reply.

    Read from the trace tables, not the checkpoint: the failing node's work never reached a
    checkpoint. None for a run that finished or holds no error. An interrupted run (a signal, an
    outage) says so (``interrupted``), and the calls the stop cancelled are counted apart, not as failed.
    """
    if row.status == "finished" or not row.error:
        return None
    calls = store.calls(row.id)
    errors = [e for e in store.events(row.id) if e.phase == "end" and e.error]
    # The node that raised, not the ones cancelled because of it (or because the process was stopped).
    node = next((e for e in errors if not cancelled(e.error)), errors[0] if errors else None)
    stopped = [c for c in calls if c.outcome == "cancelled" or (c.outcome == "failed" and cancelled(c.error))]
    failed = [c for c in calls if c.outcome == "failed" and not cancelled(c.error)]
    in_node = [c for c in failed if node is not None and c.node == node.node and c.worker == node.worker]
    candidates = in_node or failed
    call = candidates[-1] if candidates else None
    return {
        "error": row.error,
        "interrupted": row.status == "interrupted",
        "resume": f"videoatlas resume {row.id}",
        "node": None
        if node is None
        else {"node": node.node, "worker": node.worker, "round": node.round, "error": node.error},
        "call": None
        if call is None
        else {
            "node": call.node,
            "worker": call.worker,
            "round": call.round,
            "schema": call.schema,
            "attempts": call.attempts,
            "error": call.error,
            "parse_errors": call.parse_errors,
        },
        "reply": call.reply_text if call is not None and call.reply_text else None,
        "spent": {
            "calls": len(calls),
            "tokens": sum(c.prompt_tokens + c.completion_tokens for c in calls),
            "failed_calls": len(failed),
            "cancelled_calls": len(stopped),
        },
    }


def node_place(failure: dict[str, Any]) -> str:
    """The node a run stopped in, in words ("" when no node is known).

    ``decide, round 1: <error>`` for a failure; ``decide (resume with: ...)`` for an interruption (a
    cancellation is no error of the node's).
    """
    node = failure.get("node")
    if not isinstance(node, dict):
        return ""
    where = "".join(f", {k} {node[k]}" for k in ("worker", "round") if node.get(k) is not None)
    if failure.get("interrupted"):
        why = "" if cancelled(node.get("error")) else f": {node.get('error')}"  # an outage names its cause
        resume = f" (resume with: {failure['resume']})" if failure.get("resume") else ""
        return f"{node.get('node')}{where}{why}{resume}"
    return f"{node.get('node')}{where}: {node.get('error')}"


def spent_text(spent: dict[str, Any]) -> str:
    """What a run that stopped had spent: ``7 calls (0 failed, 3 cancelled), 1,234 tokens``."""
    stopped = spent.get("cancelled_calls", 0)
    counts = f"{spent['failed_calls']} failed" + (f", {stopped} cancelled" if stopped else "")
    return f"{spent['calls']} calls ({counts}), {spent['tokens']:,} tokens"


def _failure_lines(failure: dict[str, Any]) -> list[str]:
    lines = [f"  {'stopped' if failure.get('interrupted') else 'error'}: {failure['error']}"]
    place = node_place(failure)
    if place:
        lines.append(f"  {'interrupted' if failure.get('interrupted') else 'failed'} in node {place}")
    call = failure["call"]
    if call is not None:
        lines.append(
            f"  failed call: {call['schema']} from {call['node']}"
            + (f" ({call['worker']})" if call["worker"] else "")
            + f", {call['attempts']} attempt(s): {call['error']}"
        )
        for problem in call["parse_errors"]:
            lines.append(f"    unusable because: {problem}")
    if failure["reply"] is not None:
        reply = failure["reply"]
        lines.append(f"  reply that could not be used: {reply[:500]}" + ("…" if len(reply) > 500 else ""))
    lines.append(f"  cost so far: {spent_text(failure['spent'])}")
    return lines


@dataclass(frozen=True, slots=True)
class _Rows:
    """What the trace tables hold of a run."""

    row: Any
    calls: list[dict[str, Any]]
    events: list[dict[str, Any]]
    failure: dict[str, Any] | None


def _read_rows(reader: TraceStore, run_id: str) -> _Rows:
    row = reader.run(run_id)
    if row is None:
        raise BadInputError(f"no run {run_id!r} in {redact_url(reader.url)}")
    events = [
        {
            "node": e.node,
            "worker": e.worker,
            "round": e.round,
            "phase": e.phase,
            "duration_s": e.duration_s,
            "error": e.error,
        }
        for e in reader.events(row.id)
        if e.phase == "end"
    ]
    return _Rows(row, [_call_dict(c) for c in reader.calls(row.id)], events, _failure(reader, row))


def _read_images(reader: TraceStore, calls: list[dict[str, Any]]) -> dict[str, str]:
    wanted = {sha for c in calls for sha in c["images"]}
    return {sha: base64.b64encode(art.data).decode("ascii") for sha, art in reader.artifacts(sorted(wanted)).items()}


async def load_trace(
    run_id: str, db_url: str | None = None, with_images: bool = False, store: TraceStore | None = None
) -> dict[str, Any]:
    """Everything known about a run: its row, checkpointed state, model calls and node events.

    ``store``: an open store to read from (the web UI keeps one); by default one is opened and closed.
    The trace tables are read in a thread: a reader waiting for the SQLite file's lock must not hold
    up the event loop, which may be the one whose run holds that lock until it commits (a server
    answering ``trace`` while it runs a question).
    """
    url = store.url if store is not None else resolve_db_url(db_url)
    reader = store if store is not None else await asyncio.to_thread(TraceStore, url)
    try:
        found = await asyncio.to_thread(_read_rows, reader, run_id)
        row, calls, events, failure = found.row, found.calls, found.events, found.failure
        agent = get_agent(row.agent)
        snapshot = await saved_snapshot(url, row.agent, row.id)
        values: dict[str, Any] = dict(snapshot.values or {})
        images = await asyncio.to_thread(_read_images, reader, calls) if with_images else {}
    finally:
        if store is None:
            await asyncio.to_thread(reader.close)
    cost = values.get("cost")
    return {
        "run": {
            "id": row.id,
            "status": row.status,
            "question": row.question,
            "choices": row.choices,
            "video": row.video_path,
            "answer": row.answer,
            "answer_index": row.answer_index,
            "reasoning": row.reasoning,
            "stop_reason": row.stop_reason,
            "error": row.error,
            "config": row.config,
            "endpoint": row.endpoint,
            "prompt_set": row.prompt_set,
            "prompt_sha": row.prompt_sha,
            "created_at": row.created_at.isoformat(),
            "updated_at": row.updated_at.isoformat() if row.updated_at else None,
            "finished_at": row.finished_at.isoformat() if row.finished_at else None,
            "subtitles": row.subtitles,
            "cost": row.cost,
        },
        "agent": row.agent,
        # A run stopped while its step's checkpoint was being saved has no ``next``, but its tasks are still
        # there (their writes are applied on resume): they are what is left.
        "pending": list(snapshot.next or ()) or sorted({t.name for t in snapshot.tasks}),
        "detail": agent.views.trace_detail(values, calls) if agent.views.trace_detail else {},
        "timeline": _timeline(events, calls),
        "evidence": [
            {
                "label": evidence_label(i),
                "time": e.time,
                "place": e.place,
                "where": dict(e.where),
                "description": e.description,
                "confidence": e.confidence,
                "id": e.id,
                "start": e.start,
                "end": e.end,
                "subtitle": e.subtitle,
            }
            for i, e in enumerate(values.get("evidence", []))
        ],
        "repairs": [r.model_dump() for r in values.get("repairs", [])],
        "grounded": bool(values.get("cited")),
        "support": support_note(
            bool(values.get("answer")), len(values.get("cited") or []), len(values.get("evidence") or [])
        ),
        "declined": bool(values.get("declined")),  # a run from before decisions could decline: False
        "probabilities": values.get("probabilities"),  # runs from before answers had them: None
        "confidence": values.get("confidence"),
        "cited": list(values.get("cited") or []),
        "cost_state": cost.summary() if cost is not None else {},
        "calls": calls,
        "events": events,
        "images": images,
        "failure": failure,
    }


def _call_brief(call: dict[str, Any] | None) -> str:
    if not call:
        return ""
    return f"({call['prompt_tokens']:,} tokens, {call['cached_tokens']:,} cached, {call['latency_s']:.2f} s)"


def speech_text(cost: dict[str, Any]) -> str:
    """What the run's listening cost: audio seconds transcribed, transcription requests and their time."""
    return (
        f"{float(cost.get('audio_s', 0.0)):,.1f} s of audio transcribed in {int(cost.get('transcriptions', 0))} "
        f"request(s), {float(cost.get('transcribe_s', 0.0)):.1f} s"
    )


def _repair_line(repair: dict[str, Any]) -> str:
    who = f"{repair['node']}" + (f" {repair['worker']}" if repair.get("worker") else "")
    return f"{repair['kind']} ({who}): {repair['detail']}"


def _timeline(events: list[dict[str, Any]], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every node that finished, in order, with the model calls it made (any agent)."""
    made: dict[tuple[str, str | None, int | None], list[dict[str, Any]]] = {}
    for call in calls:
        made.setdefault((call["node"], call["worker"], call["round"]), []).append(call)
    out = []
    for event in events:
        mine = made.pop((event["node"], event["worker"], event["round"]), [])
        out.append(
            {
                **event,
                "calls": len(mine),
                "tokens": sum(c["prompt_tokens"] + c["completion_tokens"] for c in mine),
            }
        )
    return out


def _timeline_lines(timeline: list[dict[str, Any]]) -> list[str]:
    out = []
    for event in timeline:
        where = " ".join(
            part
            for part in (
                f"round {event['round']}" if event["round"] is not None else "",
                event["worker"] or "",
            )
            if part
        )
        calls = f", {event['calls']} call(s), {event['tokens']:,} tokens" if event["calls"] else ""
        failed = (" cancelled" if cancelled(event["error"]) else f" FAILED: {event['error']}") if event["error"] else ""
        out.append(
            f"  {event['node']}{' (' + where + ')' if where else ''}: {event['duration_s'] or 0:.2f} s{calls}{failed}"
        )
    return out


def trace_lines(trace: dict[str, Any]) -> list[str]:
    """The trace as text: a header every agent shares, then the agent's own view (or the node timeline)."""
    run = trace["run"]
    cost = trace["cost_state"]
    lines = [f"run {run['id']} [{run['status']}] ({trace['agent']}): {run['question']}"]
    if trace.get("declined"):
        lines.append(f"  answer: none [no answer found: the model declined]  ({run['stop_reason']})")
    elif run["answer"] is not None:
        note = trace["support"]
        unsupported = f" [{note}]" if note else ""
        lines.append(f"  answer: {run['answer']}{unsupported}  ({run['stop_reason']})")
        if sure := probability_note(trace.get("probabilities"), trace.get("confidence")):
            lines.append(f"  confidence: {sure}")
    if trace["pending"]:
        lines.append(f"  next to run: {', '.join(trace['pending'])} (resume with: videoatlas resume {run['id']})")
    if trace.get("failure"):
        lines += _failure_lines(trace["failure"])
    elif cost:
        fell_back = f", {cost['fallbacks']} fallback(s)" if cost.get("fallbacks") else ""
        thought = f" ({cost['reasoning_tokens']:,} reasoning)" if cost.get("reasoning_tokens") else ""
        lines.append(
            f"  cost: {cost['calls']} calls, {cost['prompt_tokens'] + cost['completion_tokens']:,} tokens{thought}, "
            f"{cost['cached_tokens']:,} cached, {cost.get('frames_viewed', 0):,} distinct frames viewed "
            f"({cost.get('frames_sent', 0):,} sent){fell_back}"
        )
        lines.append(f"  prefill: {prefill_text(cost)}")
        if cost.get("tokens_by_role"):
            lines.append(f"  tokens by role: {roles_text(cost['tokens_by_role'])}")
        if cost.get("transcriptions") or cost.get("audio_s"):
            lines.append(f"  speech: {speech_text(cost)}")
    repairs: dict[int, list[str]] = {}
    for repair in trace["repairs"]:
        repairs.setdefault(repair["round"], []).append(_repair_line(repair))
    agent = get_agent(trace["agent"])
    if agent.views.trace_lines is not None and trace["detail"]:
        lines += [f"  {line}" for line in repairs.pop(0, [])]
        lines += agent.views.trace_lines(trace["detail"], repairs)
        decide = next((c for c in trace["calls"] if c["node"] == "decide"), None)
        if decide:
            lines.append(f"  decision {_call_brief(decide)}")
    else:
        lines += [f"  {line}" for lines_of in repairs.values() for line in lines_of]
        lines += _timeline_lines(trace["timeline"])
    for e in trace["evidence"]:
        place = e["place"] or f"{format_ts(e['start'])}-{format_ts(e['end'])}"
        lines.append(f"  [{e['label']}] {format_ts(e['time'], 1)} {place}: {e['description']}")
    lines += _reasoning_lines(trace["calls"])
    return lines


REASONING_SHOWN = 160
"""Characters of a call's reasoning that ``trace`` shows on its line (``trace --json`` has it whole)."""


def _reasoning_lines(calls: list[dict[str, Any]]) -> list[str]:
    """One line per call that came with reasoning: who thought, how many tokens, how it began."""
    thought = [c for c in calls if c["reasoning"]]
    if not thought:
        return []
    lines = [f"  reasoning ({len(thought)} of {len(calls)} calls; whole text: trace --json):"]
    for call in thought:
        where = "".join(
            f" {part}" for part in (call["worker"], f"round {call['round']}" if call["round"] else None) if part
        )
        estimated = " (estimated)" if call["reasoning_estimated"] else ""
        text = " ".join(call["reasoning"].split())
        shown = text[:REASONING_SHOWN] + ("…" if len(text) > REASONING_SHOWN else "")
        lines.append(f"    {call['node']}{where}, {call['reasoning_tokens']:,} tokens{estimated}: {shown}")
    return lines
