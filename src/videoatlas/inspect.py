"""Reading a run back: its trace as a tree (``videoatlas trace``) and as one HTML page (``videoatlas report``)."""

from __future__ import annotations

import base64
import html
import io
from typing import Any

from PIL import Image

from videoatlas.agents.registry import get_agent, saved_snapshot
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
        agent = get_agent(row.agent)
        snapshot = await saved_snapshot(url, row.agent, row.id)
        values: dict[str, Any] = dict(snapshot.values or {})
        images: dict[str, str] = {}
        if with_images:
            wanted = {sha for c in calls for sha in c["images"]}
            for sha, art in store.artifacts(sorted(wanted)).items():
                images[sha] = base64.b64encode(art.data).decode("ascii")
    finally:
        store.close()
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
        "agent": row.agent,
        "pending": list(snapshot.next or ()),
        "detail": agent.trace_detail(values, calls) if agent.trace_detail else {},
        "timeline": _timeline(events, calls),
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
    }


def _call_brief(call: dict[str, Any] | None) -> str:
    if not call:
        return ""
    return f"({call['prompt_tokens']:,} tokens, {call['cached_tokens']:,} cached, {call['latency_s']:.2f} s)"


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
        failed = f" FAILED: {event['error']}" if event["error"] else ""
        out.append(
            f"  {event['node']}{' (' + where + ')' if where else ''}: {event['duration_s'] or 0:.2f} s{calls}{failed}"
        )
    return out


def trace_lines(trace: dict[str, Any]) -> list[str]:
    """The trace as text: a header every agent shares, then the agent's own view (or the node timeline)."""
    run = trace["run"]
    cost = trace["cost_state"]
    lines = [f"run {run['id']} [{run['status']}] ({trace['agent']}): {run['question']}"]
    if run["answer"] is not None:
        unsupported = "" if trace["grounded"] or not run["answer"] else " [answered without evidence]"
        lines.append(f"  answer: {run['answer']}{unsupported}  ({run['stop_reason']})")
    if trace["pending"]:
        lines.append(f"  next to run: {', '.join(trace['pending'])} (resume with: videoatlas resume {run['id']})")
    if cost:
        fell_back = f", {cost['fallbacks']} fallback(s)" if cost.get("fallbacks") else ""
        lines.append(
            f"  cost: {cost['calls']} calls, {cost['prompt_tokens'] + cost['completion_tokens']:,} tokens, "
            f"{cost['cached_tokens']:,} cached, {cost.get('frames_viewed', 0):,} distinct frames viewed "
            f"({cost.get('frames_sent', 0):,} sent){fell_back}"
        )
    repairs: dict[int, list[str]] = {}
    for repair in trace["repairs"]:
        repairs.setdefault(repair["round"], []).append(_repair_line(repair))
    agent = get_agent(trace["agent"])
    if agent.trace_lines is not None and trace["detail"]:
        lines += [f"  {line}" for line in repairs.pop(0, [])]
        lines += agent.trace_lines(trace["detail"], repairs)
        decide = next((c for c in trace["calls"] if c["node"] == "decide"), None)
        if decide:
            lines.append(f"  decision {_call_brief(decide)}")
    else:
        lines += [f"  {line}" for lines_of in repairs.values() for line in lines_of]
        lines += _timeline_lines(trace["timeline"])
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
    parts.append(f"<p><b>Reasoning:</b> {e(run['reasoning'] or '')}</p>")
    detail = trace["detail"]
    parts.append(
        f"<p><b>Agent:</b> {e(trace['agent'])} &nbsp; <b>Stopped:</b> {e(run['stop_reason'] or '')}"
        + "".join(
            f" &nbsp; <b>{e(key.replace('_', ' ').capitalize())}:</b> {e(str(detail[key] or ''))}"
            for key in ("search_task", "traversal")
            if key in detail
        )
        + "</p>"
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
    for rnd in detail.get("rounds", []):
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
    for turn in detail.get("turns", []):
        parts.append(
            f"<h3>{e(turn['header'])}</h3><p><b>Thought:</b> {e(turn['thought'])}</p>"
            f"<pre>{e(turn['observation'])}</pre>"
        )
    if not detail:
        parts.append(
            "<table><tr><th>node</th><th>round</th><th>worker</th><th>calls</th><th>tokens</th><th>time</th></tr>"
        )
        for event in trace["timeline"]:
            parts.append(
                f"<tr><td>{e(event['node'])}</td><td>{event['round'] if event['round'] is not None else ''}</td>"
                f"<td>{e(event['worker'] or '')}</td><td>{event['calls']}</td><td>{event['tokens']:,}</td>"
                f"<td>{event['duration_s'] or 0:.2f} s</td></tr>"
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
