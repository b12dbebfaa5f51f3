"""Video-RLM's section of the run page, as plain data: each round's probe, workers, steps, merge and analysis.

Read from the trace (:func:`videoatlas.agents.video_rlm.trace.detail` and the model calls) and from
what each round's merge left in the checkpoints (:mod:`videoatlas.agents.video_rlm.history`).
"""

from __future__ import annotations

from typing import Any

from videoatlas.agents.page import (
    PageContext,
    call_view,
    grid_cells,
    interval_text,
    reply_json,
    root_cell,
    view_interval,
)
from videoatlas.agents.video_rlm.state.models import found_in_cell, found_in_round
from videoatlas.environment.timefmt import format_ts


def video_length(trace: dict[str, Any], k: int, probed: float | None) -> float | None:
    """The video's length: probed from the file, else worked out from a cell target's span."""
    if probed:
        return probed
    for rnd in trace["detail"].get("rounds", []):
        for worker in rnd["workers"]:
            path = worker["target"]
            if path and "-" not in path:
                start, end = worker["span"]
                depth = len(path.strip("/").split("/"))
                return float((end - start) * k**depth)
    return None


def _probe(call: dict[str, Any] | None, workers: list[dict[str, Any]], k: int) -> dict[str, Any]:
    reply = reply_json(call)
    chosen = [c for c in reply.get("cells", []) if isinstance(c, int)]
    assigned = {
        cell: w["worker"]
        for w in workers
        if (cell := root_cell(w["target"])) is not None and "/" not in w["target"].strip("/")
    }
    labels = {c: f"{c}: {assigned[c]}" if c in assigned else str(c) for c in {*chosen, *assigned}}
    return {
        "call": call_view(call),
        "grid": call["images"][0] if call and call["images"] else None,
        "chosen": chosen,
        "outlines": grid_cells([*chosen, *assigned], k, labels),
        "reason": reply.get("reason", ""),
        "assigned": [(w["worker"], w["target"], w.get("source", "")) for w in workers],
    }


def _anchors(rnd: dict[str, Any]) -> list[str]:
    """The probe grid's anchors as the page lists them: ``5 @01:02.5 rel 83``."""
    out = []
    for a in rnd.get("anchors", []):
        parts = [str(a["cell"])]
        if a["time"] is not None:
            parts.append("@" + format_ts(a["time"], 1))
        if a["score"] is not None:
            parts.append(f"rel {min(99, round(100 * a['score']))}")
        out.append(" ".join(parts))
    return out


def _workers(
    rnd: dict[str, Any], calls: list[dict[str, Any]], duration: float | None, k: int, labels: dict[str, str]
) -> list[dict[str, Any]]:
    mine = [c for c in calls if c["round"] == rnd["round"] and c["worker"] and c["step"] is not None]
    by_step = {(c["worker"], c["step"]): c for c in mine}
    out = []
    for worker in rnd["workers"]:
        start, end = worker["span"]
        steps = []
        for step in worker["steps"]:
            call = by_step.get((worker["worker"], step["index"]))
            steps.append(
                {
                    **step,
                    "number": step["index"] + 1,
                    "interval": view_interval(step["view"], duration, k),
                    "call": call_view(call),
                }
            )
        out.append(
            {
                **worker,
                "interval": interval_text(start, end),
                "steps": steps,
                "found": [labels.get(e, e) for e in worker.get("evidence", [])],
            }
        )
    return out


def _uncertainty(
    call: dict[str, Any] | None, check: dict[str, Any] | None, choices: list[str], labels: dict[str, str]
) -> dict[str, Any] | None:
    if call is None and check is None:
        return None
    reply = reply_json(call)
    statuses = []
    for entry in (check or {}).get("statuses", []):
        index, _, status = str(entry).partition(":")
        choice = int(index) if index.isdigit() else -1
        statuses.append(
            {
                "letter": chr(ord("A") + choice) if 0 <= choice < 26 else "?",
                "choice": choices[choice] if 0 <= choice < len(choices) else "",
                "status": status,
            }
        )
    ranges = [
        interval_text(float(r["start"]), float(r["end"]))
        for r in reply.get("explore_ranges", [])
        if isinstance(r, dict) and isinstance(r.get("start"), int | float) and isinstance(r.get("end"), int | float)
    ]
    return {
        "call": call_view(call),
        "sufficient": (check or {}).get("sufficient"),
        "statuses": statuses,
        "hint_cells": [c for c in reply.get("explore_cells", []) if isinstance(c, int)],
        "hint_ranges": ranges,
        "hints": (check or {}).get("hints", 0),
        "erased": [labels.get(e, e) for e in (check or {}).get("erased", [])],
        "reasoning": (check or {}).get("reasoning") or reply.get("reasoning", ""),
    }


def _merge(
    round_no: int, after: dict[int, dict[str, Any]], erased_later: set[str], final_evidence: list[dict[str, Any]]
) -> dict[str, Any] | None:
    state = after.get(round_no)
    if state is None:
        found = [e for e in final_evidence if e.get("round") == round_no]
        return {"evidence": found, "dead_zones": None} if found else None
    before = after.get(round_no - 1, {"dead_zones": []})
    old = {tuple(z) for z in before["dead_zones"]}
    new_zones = [interval_text(a, b) for a, b in state["dead_zones"] if (a, b) not in old]
    labels = {e["id"]: e["label"] for e in final_evidence}
    items = [
        {
            "id": e.id,
            "label": labels.get(e.id, ""),
            "time": e.time,
            "cell": found_in_cell(e),
            "description": e.description,
            "confidence": e.confidence,
            "erased": e.id in erased_later or e.id not in labels,
        }
        for e in state["evidence"]
        if found_in_round(e) == round_no
    ]
    return {"evidence": items, "dead_zones": new_zones}


def rounds(
    trace: dict[str, Any], after: dict[int, dict[str, Any]], duration: float | None, k: int
) -> list[dict[str, Any]]:
    """The rounds: the probe, each worker and its steps, the merge, the uncertainty analysis."""
    detail = trace["detail"]
    checks = {c["round"]: c for c in detail.get("checks", [])}
    erased = {e for c in detail.get("checks", []) for e in c.get("erased", [])}
    labels = {e["id"]: f"[{e['label']}]" for e in trace["evidence"]}
    repairs: dict[int, list[dict[str, Any]]] = {}
    for repair in trace["repairs"]:
        repairs.setdefault(repair["round"], []).append(repair)
    errors: dict[int | None, list[dict[str, Any]]] = {}
    for event in trace["timeline"]:
        if event["error"]:
            errors.setdefault(event["round"], []).append(event)
    out = []
    for rnd in detail.get("rounds", []):
        number = rnd["round"]
        workers = _workers(rnd, trace["calls"], duration, k, labels)
        out.append(
            {
                "round": number,
                "probe": {**_probe(rnd.get("global_probe"), rnd["workers"], k), "anchors": _anchors(rnd)},
                "workers": workers,
                "merge": _merge(number, after, erased, trace["evidence"]),
                "uncertainty": _uncertainty(
                    rnd.get("analyze_uncertainty"), checks.get(number), trace["run"]["choices"], labels
                ),
                "repairs": repairs.get(number, []),
                "errors": errors.get(number, []),
            }
        )
    return out


def page_view(trace: dict[str, Any], context: PageContext) -> dict[str, Any]:
    """The run page's Video-RLM section: its facts, its rounds, the steps taken, and repairs outside any round.

    Its rounds stand in for the node timeline; a repair made in a round is shown in that round.
    """
    detail = trace["detail"]
    length = video_length(trace, context.k, context.duration)
    facts = [(label, detail.get(key)) for label, key in (("Search task", "search_task"), ("Traversal", "traversal"))]
    return {
        "duration": length,
        "facts": [(label, value) for label, value in facts if value],
        "rounds": rounds(trace, context.history, length, context.k),
        "steps": sum(len(w["steps"]) for r in detail.get("rounds", []) for w in r["workers"]),
        "repairs": [r for r in trace["repairs"] if not detail.get("rounds") or r["round"] == 0],
    }
