"""Reading a run back: its trace as a tree (``videoatlas trace``) and as one HTML page (``videoatlas report``)."""

from __future__ import annotations

import base64
import html
import io
from typing import Any

from PIL import Image

from videoatlas.agents.registry import saved_snapshot
from videoatlas.environment.render import evidence_label
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import BadInputError
from videoatlas.persistence.db import redact_url, resolve_db_url
from videoatlas.persistence.store import TraceStore


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
    }


def _failure(store: TraceStore, row: Any) -> dict[str, Any] | None:
    """What stopped a run that did not finish: its error, the node and model call that failed, the unusable reply.

    Read from the trace tables, not the checkpoint: the failing node's work never reached a
    checkpoint. None for a run that finished or holds no error.
    """
    if row.status == "finished" or not row.error:
        return None
    calls = store.calls(row.id)
    errors = [e for e in store.events(row.id) if e.phase == "end" and e.error]
    # The node that raised, not the ones cancelled because of it (or because the process was stopped).
    node = next((e for e in errors if not (e.error or "").startswith("CancelledError")), errors[0] if errors else None)
    failed = [c for c in calls if c.outcome == "failed"]
    in_node = [c for c in failed if node is not None and c.node == node.node and c.worker == node.worker]
    candidates = in_node or failed
    call = candidates[-1] if candidates else None
    return {
        "error": row.error,
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
        },
    }


def _failure_lines(failure: dict[str, Any]) -> list[str]:
    lines = [f"  error: {failure['error']}"]
    node = failure["node"]
    if node is not None:
        where = "".join(f", {k} {node[k]}" for k in ("worker", "round") if node[k] is not None)
        lines.append(f"  failed in node {node['node']}{where}: {node['error']}")
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
    spent = failure["spent"]
    lines.append(f"  cost so far: {spent['calls']} calls ({spent['failed_calls']} failed), {spent['tokens']:,} tokens")
    return lines


async def load_trace(run_id: str, db_url: str | None = None, with_images: bool = False) -> dict[str, Any]:
    """Everything known about a run: its row, checkpointed state, model calls and node events."""
    url = resolve_db_url(db_url)
    store = TraceStore(url)
    try:
        row = store.run(run_id)
        if row is None:
            raise BadInputError(f"no run {run_id!r} in {redact_url(url)}")
        calls = [_call_dict(c) for c in store.calls(row.id)]
        events = [
            {
                "node": e.node,
                "worker": e.worker,
                "round": e.round,
                "phase": e.phase,
                "duration_s": e.duration_s,
                "error": e.error,
            }
            for e in store.events(row.id)
            if e.phase == "end"
        ]
        failure = _failure(store, row)
        snapshot = await saved_snapshot(url, row.agent, row.id)
        values: dict[str, Any] = dict(snapshot.values or {})
        images: dict[str, str] = {}
        if with_images:
            wanted = {sha for c in calls for sha in c["images"]}
            for sha, art in store.artifacts(sorted(wanted)).items():
                images[sha] = base64.b64encode(art.data).decode("ascii")
    finally:
        store.close()
    reports = values.get("reports", [])
    rounds: dict[int, dict[str, Any]] = {}
    for call in calls:
        if call["node"] in ("global_probe", "analyze_uncertainty") and call["round"] is not None:
            rounds.setdefault(call["round"], {"round": call["round"], "workers": []})[call["node"]] = call
    for report in reports:
        entry = rounds.setdefault(report.round, {"round": report.round, "workers": []})
        entry["workers"].append(
            {
                "worker": report.worker,
                "target": report.target.key,
                "stop": report.stop,
                "invalid_actions": report.invalid_actions,
                "evidence": report.evidence_ids,
                "steps": [
                    {
                        "index": s.index,
                        "action": s.action,
                        "cells": s.cells,
                        "note": s.note,
                        "view": s.view.path if s.view.path is not None else f"{s.view.start:.2f}-{s.view.end:.2f}",
                        "image_sha": s.image_sha,
                        "prompt_tokens": s.prompt_tokens,
                        "latency_s": round(s.latency_s, 3),
                        "valid": s.valid,
                    }
                    for s in report.steps
                ],
            }
        )
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
            "cost": row.cost,
        },
        "search_task": values.get("search_task"),
        "traversal": values.get("traversal"),
        "pending": list(snapshot.next or ()),
        "rounds": [rounds[k] for k in sorted(rounds)],
        "checks": values.get("checks", []),
        "evidence": [
            {
                "label": evidence_label(i),
                "time": e.time,
                "cell": e.cell,
                "description": e.description,
                "confidence": e.confidence,
                "id": e.id,
            }
            for i, e in enumerate(values.get("evidence", []))
        ],
        "repairs": [r.model_dump() for r in values.get("repairs", [])],
        "grounded": bool(values.get("cited")),
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


def _repair_line(repair: dict[str, Any]) -> str:
    who = f"{repair['node']}" + (f" {repair['worker']}" if repair.get("worker") else "")
    return f"{repair['kind']} ({who}): {repair['detail']}"


def trace_lines(trace: dict[str, Any]) -> list[str]:
    """The trace as an indented tree: rounds -> workers -> steps."""
    run = trace["run"]
    cost = trace["cost_state"]
    lines = [f"run {run['id']} [{run['status']}]: {run['question']}"]
    if run["answer"] is not None:
        unsupported = "" if trace["grounded"] or not run["answer"] else " [answered without evidence]"
        lines.append(f"  answer: {run['answer']}{unsupported}  ({run['stop_reason']})")
    if trace["pending"]:
        lines.append(f"  next to run: {', '.join(trace['pending'])} (resume with: videoatlas resume {run['id']})")
    if trace.get("failure"):
        lines += _failure_lines(trace["failure"])
    elif cost:
        fell_back = f", {cost['fallbacks']} fallback(s)" if cost.get("fallbacks") else ""
        lines.append(
            f"  cost: {cost['calls']} calls, {cost['prompt_tokens'] + cost['completion_tokens']:,} tokens, "
            f"{cost['cached_tokens']:,} cached, {cost.get('frames_viewed', 0):,} distinct frames viewed "
            f"({cost.get('frames_sent', 0):,} sent){fell_back}"
        )
    if trace["search_task"] is not None:  # None: the run stopped before it had one
        lines.append(f"  search task: {trace['search_task']}")
    if trace["traversal"] is not None:
        lines.append(f"  traversal: {trace['traversal']}")
    checks = {c["round"]: c for c in trace["checks"]}
    repairs: dict[int, list[dict[str, Any]]] = {}
    for repair in trace["repairs"]:
        repairs.setdefault(repair["round"], []).append(repair)
    for repair in repairs.pop(0, []):
        lines.append(f"  {_repair_line(repair)}")
    for rnd in trace["rounds"]:
        probe = rnd.get("global_probe")
        lines.append(f"  round {rnd['round']}: probe {_call_brief(probe)}")
        for repair in repairs.get(rnd["round"], []):
            lines.append(f"    {_repair_line(repair)}")
        for worker in rnd["workers"]:
            lines.append(
                f"    {worker['worker']} -> {worker['target']} [{worker['stop']}]"
                + (f", {worker['invalid_actions']} invalid" if worker["invalid_actions"] else "")
            )
            for step in worker["steps"]:
                cells = f" {step['cells']}" if step["cells"] else ""
                lines.append(
                    f"      step {step['index'] + 1}: {step['action']}{cells} on {step['view']} "
                    f"({step['prompt_tokens']:,} tokens, {step['latency_s']:.2f} s): {step['note']}"
                )
        check = checks.get(rnd["round"])
        if check:
            verdict = "sufficient" if check["sufficient"] else "not sufficient"
            lines.append(
                f"    uncertainty: {verdict} {_call_brief(rnd.get('analyze_uncertainty'))}: {check['reasoning'][:160]}"
            )
    decide = next((c for c in trace["calls"] if c["node"] == "decide"), None)
    if decide:
        lines.append(f"  decision {_call_brief(decide)}")
    for e in trace["evidence"]:
        lines.append(f"  [{e['label']}] {format_ts(e['time'], 1)} {e['cell'] or ''}: {e['description']}")
    return lines


def _img(b64: str | None, max_px: int, alt: str) -> str:
    if not b64:
        return f"<p class=missing>(image {html.escape(alt)} not stored)</p>"
    raw = base64.b64decode(b64)
    with Image.open(io.BytesIO(raw)) as original:
        if max(original.size) > max_px:
            small = original.convert("RGB")
            small.thumbnail((max_px, max_px))
            buf = io.BytesIO()
            small.save(buf, format="JPEG", quality=80)
            raw = buf.getvalue()
    data = base64.b64encode(raw).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/jpeg;base64,{data}">'


def render_report(trace: dict[str, Any]) -> str:
    """One self-contained HTML page; every piece of model text is escaped."""
    e = html.escape
    run = trace["run"]
    images = trace["images"]
    decide = next((c for c in reversed(trace["calls"]) if c["node"] == "decide"), None)
    last_images = (
        decide["images"]
        if decide
        else next(
            (c["images"] for c in reversed(trace["calls"]) if c["node"] in ("analyze_uncertainty", "global_probe")), []
        )
    )
    parts = [
        "<!doctype html><html><head><meta charset=utf-8>",
        f"<title>videoatlas run {e(run['id'])}</title>",
        "<style>body{font-family:sans-serif;max-width:1300px;margin:auto;padding:1em}img{max-width:100%}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}"
        ".step img{max-width:320px}.missing{color:#999}.invalid{color:#b00}</style></head><body>",
        f"<h1>Run {e(run['id'])} <small>[{e(run['status'])}]</small></h1>",
        f"<p><b>Question:</b> {e(run['question'])}</p>",
    ]
    if run["choices"]:
        parts.append("<ol type=A>" + "".join(f"<li>{e(c)}</li>" for c in run["choices"]) + "</ol>")
    parts.append(f"<p><b>Answer:</b> {e(run['answer'] or '(none yet)')}</p>")
    failure = trace.get("failure")
    if failure:
        parts.append("<h2>Why it stopped</h2><ul class=invalid>")
        parts += [f"<li>{e(line.strip())}</li>" for line in _failure_lines({**failure, "reply": None})]
        parts.append("</ul>")
        if failure["reply"] is not None:
            parts.append(f"<p><b>Reply that could not be used:</b></p><pre>{e(failure['reply'])}</pre>")
    parts.append(f"<p><b>Reasoning:</b> {e(run['reasoning'] or '')}</p>")
    parts.append(
        f"<p><b>Search task:</b> {e(trace['search_task'] or '')} &nbsp; <b>Traversal:</b> "
        f"{e(trace['traversal'] or '')} &nbsp; <b>Stopped:</b> {e(run['stop_reason'] or '')}</p>"
    )
    parts.append("<h2>Root grid with explored regions</h2>")
    parts.append(_img(images.get(last_images[0]) if last_images else None, 1280, "root grid"))
    parts.append("<h2>Scratchpad</h2>")
    for sha in last_images[1:]:
        parts.append(_img(images.get(sha), 1280, "scratchpad"))
    parts.append("<table><tr><th>label</th><th>time</th><th>cell</th><th>description</th><th>confidence</th></tr>")
    for ev in trace["evidence"]:
        parts.append(
            f"<tr><td>[{e(ev['label'])}]</td><td>{e(format_ts(ev['time'], 2))}</td><td>{e(ev['cell'] or '')}"
            f"</td><td>{e(ev['description'])}</td><td>{ev['confidence']:.2f}</td></tr>"
        )
    parts.append("</table><h2>Timeline</h2>")
    for rnd in trace["rounds"]:
        parts.append(f"<h3>Round {rnd['round']}</h3>")
        for worker in rnd["workers"]:
            parts.append(
                f"<h4>{e(worker['worker'])} &rarr; {e(worker['target'])} [{e(worker['stop'])}]</h4>"
                "<table><tr><th>step</th><th>saw</th><th>action</th><th>tokens</th><th>latency</th></tr>"
            )
            for step in worker["steps"]:
                cls = "" if step["valid"] else " class=invalid"
                parts.append(
                    f"<tr class=step><td>{step['index'] + 1}</td><td>{_img(images.get(step['image_sha']), 640, 'view')}"
                    f"</td><td{cls}><b>{e(step['action'])}</b> {e(str(step['cells']))}<br>{e(step['note'])}</td>"
                    f"<td>{step['prompt_tokens']:,}</td><td>{step['latency_s']:.2f} s</td></tr>"
                )
            parts.append("</table>")
    parts.append(
        "<h2>Cost</h2><table><tr><th>node</th><th>calls</th><th>prompt tokens</th><th>cached</th>"
        "<th>completion</th><th>latency</th></tr>"
    )
    by_node: dict[str, list[dict[str, Any]]] = {}
    for call in trace["calls"]:
        by_node.setdefault(call["node"], []).append(call)
    for node, calls in by_node.items():
        parts.append(
            f"<tr><td>{e(node)}</td><td>{len(calls)}</td><td>{sum(c['prompt_tokens'] for c in calls):,}</td>"
            f"<td>{sum(c['cached_tokens'] for c in calls):,}</td>"
            f"<td>{sum(c['completion_tokens'] for c in calls):,}</td>"
            f"<td>{sum(c['latency_s'] for c in calls):.2f} s</td></tr>"
        )
    parts.append("</table></body></html>")
    return "\n".join(parts)
