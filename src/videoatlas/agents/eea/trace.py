"""How an EEA run reads back: the index, the queries and anchors, then each round's expansion.

Round by round: the segment expanded, its frames (anchors among them), the children's scores and
what the selection did next.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from videoatlas.agents import decision
from videoatlas.agents.eea.views import moments, span
from videoatlas.agents.page import PageContext, timeline


def detail(values: dict[str, Any], calls: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The search as plain data."""
    segments = {s.id: s for s in values.get("segments", [])}
    index = values.get("index")
    return {
        "index": index.model_dump() if index is not None else None,
        "queries": list(values.get("queries", [])),
        "anchors": [[a.time, round(a.phi, 4)] for a in values.get("anchors", [])],
        "rounds": [
            {
                "index": r.index,
                "segment": r.segment,
                "span": [segments[r.segment].start, segments[r.segment].end] if r.segment in segments else None,
                "frames": r.frames,
                "anchor_frames": r.anchor_frames,
                "uncertainty": r.uncertainty,
                "children": [
                    {
                        "id": c,
                        "span": [segments[c].start, segments[c].end],
                        "r": segments[c].reward,
                        "u": round(segments[c].score, 4),
                        "h": round(segments[c].fused, 4),
                        "explanation": segments[c].explanation,
                    }
                    for c in r.children
                    if c in segments
                ],
                "new_queries": r.new_queries,
                "choice": r.choice,
                "thought": r.thought,
            }
            for r in values.get("rounds", [])
        ],
        "memory": [m.time for m in values.get("memory", [])],
    }


def lines(found: dict[str, Any], repairs: dict[int, list[str]]) -> list[str]:
    """The index, the queries, then one block per round."""
    out = []
    index = found.get("index")
    if index:
        how = "reused" if index["reused"] else f"built in {index['build_s']:.1f} s"
        out.append(f"  index: {index['frames']} frames at {index['fps']:g} fps by {index['model']} ({how})")
        if index.get("note"):
            out.append(f"    {index['note']}")
    out.append(f"  queries: {'; '.join(found['queries'])}")
    out.append(f"  anchors: {moments([a[0] for a in found['anchors']])}")
    for r in found["rounds"]:
        where = span(*r["span"]) if r["span"] else f"segment {r['segment']}"
        out.append(f"  round {r['index']}: expanded {where}, H={r['uncertainty']:.2f}")
        out.append(f"    frames {moments(r['frames'])} (anchors {moments(r['anchor_frames'])})")
        out += [f"    {line}" for line in repairs.get(r["index"], [])]
        for c in r["children"]:
            out.append(f"    {c['id']}: {span(*c['span'])} r={c['r']:.2f} u={c['u']:.2f} h={c['h']:.2f}")
        if r["new_queries"]:
            out.append(f"    new queries: {'; '.join(r['new_queries'])}")
        out.append(f"    then: {r['choice'] or '-'} {r['thought'][:160]}")
    return out


def page_view(trace: dict[str, Any], context: PageContext) -> dict[str, Any]:
    """The run page's EEA section: the index as a fact, then every node with its calls."""
    index = trace["detail"].get("index")
    facts = []
    if index:
        how = "reused" if index["reused"] else f"built in {index['build_s']:.1f} s"
        facts.append(("frame index", f"{index['frames']} frames at {index['fps']:g} fps ({how})"))
    facts.append(("queries", "; ".join(trace["detail"].get("queries", []))))
    return {"facts": facts, "timeline": timeline(trace), "steps": len(trace["detail"].get("rounds", []))}


def describe_event(event: dict[str, Any]) -> str | None:
    """A progress line for ``ask`` (the index being built, anchors found, each round's step)."""
    kind = event.get("event")
    if kind == "index":
        return f"indexing frames: {event['done']}/{event['frames']}"
    if kind == "anchors":
        how = "reused" if event["reused"] else "built"
        return f"{event['queries']} queries, {event['anchors']} anchors (index of {event['index_frames']} frames {how})"
    if kind == "expand":
        return f"round {event['round']}: expanding {span(event['start'], event['end'])} ({event['anchors']} anchors)"
    if kind == "selected":
        step = "answer" if event["segment"] is None else f"segment {event['segment']}"
        return f"round {event['round']}: next {step}"
    return decision.describe_event(event)


def extras(state: dict[str, Any]) -> dict[str, Any]:
    """What an EEA run reports beyond every agent's answer and cost: the frame embedding index it searched."""
    return {
        "index_frames": int(state.get("index_frames") or 0),
        "index_s": round(float(state.get("index_s") or 0.0), 3),
    }
