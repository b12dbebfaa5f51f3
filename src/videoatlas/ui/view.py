"""A run as the run page shows it: the trace of :func:`videoatlas.inspect.load_trace` turned into plain view data.

The templates only lay out what this module computes (intervals, which cells to outline, which
call belongs to which step), so the page served by ``videoatlas ui`` and the file written by
``videoatlas report`` are one rendering of one view.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from videoatlas.environment.geometry import cell_interval, parse_path
from videoatlas.environment.render import evidence_label
from videoatlas.environment.timefmt import format_ts
from videoatlas.persistence.db import redact_url

WORKER_NODES = ("worker",)
MASTER_NODES = ("global_probe", "analyze_uncertainty", "decide")


def endpoint_host(base_url: str | None) -> str:
    """Only the host (and port) of an endpoint: never its path, user or password."""
    if not base_url:
        return ""
    parts = urlsplit(redact_url(base_url))
    host = parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


def reply_json(call: dict[str, Any] | None) -> dict[str, Any]:
    """A call's reply as parsed JSON (empty when there is none or it is not a JSON object)."""
    if not call or not call.get("reply_text"):
        return {}
    try:
        value = json.loads(call["reply_text"])
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    when = datetime.fromisoformat(text)
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _grid_cells(cells: Sequence[int], k: int, labels: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """Where root cells lie on a K x K sheet, in percent (cells outside the sheet are left out)."""
    out = []
    for cell in sorted(set(cells)):
        if 0 <= cell < k * k:
            row, col = divmod(cell, k)
            out.append(
                {
                    "cell": cell,
                    "left": round(100 * col / k, 3),
                    "top": round(100 * row / k, 3),
                    "size": round(100 / k, 3),
                    "label": (labels or {}).get(cell, str(cell)),
                }
            )
    return out


def _root_cell(path: str | None) -> int | None:
    if not path:
        return None
    head = path.strip("/").split("/")[0]
    return int(head) if head.isdigit() else None


def _duration(trace: dict[str, Any], k: int, probed: float | None) -> float | None:
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


def _interval_text(start: float, end: float) -> str:
    return f"{format_ts(start, 1)}–{format_ts(end, 1)}"


def _view_interval(view: str, duration: float | None, k: int) -> str:
    if "-" in view:
        start, _, end = view.partition("-")
        try:
            return _interval_text(float(start), float(end))
        except ValueError:
            return view
    if duration is None:
        return ""
    try:
        iv = cell_interval(duration, parse_path(view, k), k)
    except ValueError:
        return ""
    return _interval_text(iv.start, iv.end)


def _call_view(call: dict[str, Any] | None) -> dict[str, Any] | None:
    if call is None:
        return None
    return {
        **call,
        "tokens": call["prompt_tokens"] + call["completion_tokens"],
    }


def settings_rows(values: dict[str, Any]) -> list[tuple[str, str]]:
    """Settings as the command line takes them: ``(--cell-px, 96)``, ``(--token-budget, none)``."""
    return [("--" + key.replace("_", "-"), _setting_text(value)) for key, value in values.items()]


def _setting_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(_setting_text(v) for v in value)
    return str(value)


def header(trace: dict[str, Any], duration: float | None, status: str | None = None) -> dict[str, Any]:
    """What the run was: video, model, endpoint host, prompts, settings, dates, total cost and wall time.

    ``status``: the run's status as the runs list shows it (``stale`` for a dead run still marked running).
    """
    run = trace["run"]
    now = datetime.now(UTC)
    cost = {**(trace.get("cost_state") or {}), **(run.get("cost") or {})}
    created = _parse_time(run.get("created_at"))
    finished = _parse_time(run.get("finished_at"))
    updated = _parse_time(run.get("updated_at"))
    status = status or run["status"]
    wall = cost.get("wall_s")
    if wall is None and created is not None:
        wall = ((finished or (now if status == "running" else updated or now)) - created).total_seconds()
    config = dict(run.get("config") or {})
    agent_settings = config.pop("settings", None) or {}
    endpoint = run.get("endpoint") or {}
    tokens = cost.get("tokens")
    if tokens is None and "prompt_tokens" in cost:
        tokens = cost["prompt_tokens"] + cost.get("completion_tokens", 0)
    return {
        "status": status,
        "video": run["video"],
        "video_name": run["video"].replace("\\", "/").rsplit("/", 1)[-1],
        "duration": format_ts(duration, 1) if duration else "unknown",
        "model": endpoint.get("model") or "(the endpoint's first model)",
        "host": endpoint_host(endpoint.get("base_url")),
        "prompt_set": run.get("prompt_set"),
        "prompt_sha": run.get("prompt_sha"),
        "settings": settings_rows({k: v for k, v in config.items() if k != "agent" and (k != "thinking" or v)}),
        "agent_settings": settings_rows(agent_settings),
        "created": created,
        "finished": finished,
        "updated": updated,
        "tokens": tokens,
        "calls": cost.get("calls"),
        "cached_tokens": cost.get("cached_tokens"),
        "reasoning_tokens": cost.get("reasoning_tokens"),
        "frames_viewed": cost.get("frames_viewed"),
        "fallbacks": cost.get("fallbacks"),
        "wall_s": wall,
    }


def _probe(call: dict[str, Any] | None, workers: list[dict[str, Any]], k: int) -> dict[str, Any]:
    reply = reply_json(call)
    chosen = [c for c in reply.get("cells", []) if isinstance(c, int)]
    assigned = {
        cell: w["worker"]
        for w in workers
        if (cell := _root_cell(w["target"])) is not None and "/" not in w["target"].strip("/")
    }
    labels = {c: f"{c}: {assigned[c]}" if c in assigned else str(c) for c in {*chosen, *assigned}}
    return {
        "call": _call_view(call),
        "grid": call["images"][0] if call and call["images"] else None,
        "chosen": chosen,
        "outlines": _grid_cells([*chosen, *assigned], k, labels),
        "reason": reply.get("reason", ""),
        "assigned": [(w["worker"], w["target"], w.get("source", "")) for w in workers],
    }


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
                    "interval": _view_interval(step["view"], duration, k),
                    "call": _call_view(call),
                }
            )
        out.append(
            {
                **worker,
                "interval": _interval_text(start, end),
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
        _interval_text(float(r["start"]), float(r["end"]))
        for r in reply.get("explore_ranges", [])
        if isinstance(r, dict) and isinstance(r.get("start"), int | float) and isinstance(r.get("end"), int | float)
    ]
    return {
        "call": _call_view(call),
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
    new_zones = [_interval_text(a, b) for a, b in state["dead_zones"] if (a, b) not in old]
    labels = {e["id"]: e["label"] for e in final_evidence}
    items = [
        {
            "id": e.id,
            "label": labels.get(e.id, ""),
            "time": e.time,
            "cell": e.cell,
            "description": e.description,
            "confidence": e.confidence,
            "erased": e.id in erased_later or e.id not in labels,
        }
        for e in state["evidence"]
        if e.round == round_no
    ]
    return {"evidence": items, "dead_zones": new_zones}


def rounds(
    trace: dict[str, Any], after: dict[int, dict[str, Any]], duration: float | None, k: int
) -> list[dict[str, Any]]:
    """Video-RLM's rounds: the probe, each worker and its steps, the merge, the uncertainty analysis."""
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
                "probe": _probe(rnd.get("global_probe"), rnd["workers"], k),
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


def decision(trace: dict[str, Any], k: int) -> dict[str, Any] | None:
    """The final decision: its call, the root grid with cells that gave findings, the scratchpad, citations."""
    call = next((c for c in reversed(trace["calls"]) if c["node"] in ("decide", "answer")), None)
    run = trace["run"]
    if call is None and run["answer"] is None:
        return None
    cited = set(trace.get("cited", []))
    evidence = [{**e, "cited": e["id"] in cited} for e in trace["evidence"]]
    findings: dict[int, int] = {}
    for e in evidence:
        cell = _root_cell(e.get("cell"))
        if cell is not None:
            findings[cell] = findings.get(cell, 0) + 1
    images = call["images"] if call else []
    grid_call = call if trace["agent"] == "video-rlm" else None
    return {
        "call": _call_view(call),
        "grid": images[0] if grid_call and images else None,
        "findings": _grid_cells(list(findings), k, {c: f"{c}: {n} found" for c, n in findings.items()}),
        "scratchpad": images[1:] if grid_call else images,
        "evidence": evidence,
        "answer": run["answer"],
        "answer_letter": chr(ord("A") + run["answer_index"]) if run.get("answer_index") is not None else "",
        "reasoning": run["reasoning"],
        "stop_reason": run["stop_reason"],
        "grounded": trace["grounded"],
    }


def timeline(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """Any agent's node events in order, each with the calls it made (reply text, images)."""
    made: dict[tuple[str, str | None, int | None], list[dict[str, Any]]] = {}
    for call in trace["calls"]:
        made.setdefault((call["node"], call["worker"], call["round"]), []).append(call)
    out = []
    for event in trace["timeline"]:
        mine = made.pop((event["node"], event["worker"], event["round"]), [])
        out.append({**event, "call_list": [_call_view(c) for c in mine]})
    for (node, worker, round_no), rest in made.items():  # calls of a node that has not ended yet
        out.append(
            {
                "node": node,
                "worker": worker,
                "round": round_no,
                "duration_s": None,
                "error": None,
                "calls": len(rest),
                "tokens": sum(c["prompt_tokens"] + c["completion_tokens"] for c in rest),
                "call_list": [_call_view(c) for c in rest],
            }
        )
    return out


def _failure(failure: Any) -> dict[str, Any] | None:
    """Why a run stopped, as lines to show: the error, the node and call that failed, the unusable reply, the cost."""
    if not failure:
        return None
    if not isinstance(failure, dict):
        return {"error": str(failure), "node": None, "call": None, "problems": [], "reply": None, "spent": None}
    node, call, spent = failure.get("node"), failure.get("call"), failure.get("spent")
    where = node if isinstance(node, str) else ""
    if isinstance(node, dict):
        place = "".join(f", {k} {node[k]}" for k in ("worker", "round") if node.get(k) is not None)
        where = f"{node.get('node')}{place}: {node.get('error')}"
    what = call if isinstance(call, str) else ""
    if isinstance(call, dict):
        who = f" ({call['worker']})" if call.get("worker") else ""
        what = (
            f"{call.get('schema')} from {call.get('node')}{who}, {call.get('attempts')} attempt(s): {call.get('error')}"
        )
    return {
        "error": failure.get("error"),
        "node": where or None,
        "call": what or None,
        "problems": list(call.get("parse_errors") or []) if isinstance(call, dict) else [],
        "reply": failure.get("reply"),
        "spent": (
            f"{spent['calls']} calls ({spent['failed_calls']} failed), {spent['tokens']:,} tokens"
            if isinstance(spent, dict)
            else None
        ),
    }


def run_view(
    trace: dict[str, Any],
    after: dict[int, dict[str, Any]] | None = None,
    duration: float | None = None,
    status: str | None = None,
) -> dict[str, Any]:
    """Everything the run page shows, as plain data."""
    config = trace["run"].get("config") or {}
    k = int(config.get("k", 8))
    length = _duration(trace, k, duration)
    detail = trace["detail"]
    steps = sum(len(w["steps"]) for r in detail.get("rounds", []) for w in r["workers"])
    general_repairs = [r for r in trace["repairs"] if not detail.get("rounds") or r["round"] == 0]
    return {
        "run": trace["run"],
        "agent": trace["agent"],
        "header": header(trace, length, status),
        "failure": _failure(trace.get("failure")),
        "pending": trace["pending"],
        "search_task": detail.get("search_task"),
        "traversal": detail.get("traversal"),
        "k": k,
        "rounds": rounds(trace, after or {}, length, k) if "rounds" in detail else [],
        "turns": detail.get("turns", []),
        "timeline": timeline(trace) if "rounds" not in detail else [],
        "decision": decision(trace, k),
        "repairs": general_repairs,
        "steps": steps,
        "calls": len(trace["calls"]),
        "labels": {e["id"]: e["label"] for e in trace["evidence"]},
        "evidence_label": evidence_label,
    }
