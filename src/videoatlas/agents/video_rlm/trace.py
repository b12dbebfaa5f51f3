"""How a Video-RLM run reads back: rounds -> probe, workers and their steps, the uncertainty analysis."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from videoatlas.agents.video_rlm.occurrences import occurrences
from videoatlas.environment.timefmt import format_ts
from videoatlas.textsafe import one_line


def detail(values: dict[str, Any], calls: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The run's rounds as plain data, from its checkpointed state and its model calls."""
    rounds: dict[int, dict[str, Any]] = {}
    for call in calls:
        if call["node"] in ("global_probe", "analyze_uncertainty") and call["round"] is not None:
            rounds.setdefault(call["round"], {"round": call["round"], "workers": []})[call["node"]] = call
    for report in values.get("reports", []):
        entry = rounds.setdefault(report.round, {"round": report.round, "workers": []})
        entry["workers"].append(
            {
                "worker": report.worker,
                "target": report.target.key,
                "span": [report.target.start, report.target.end],
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
    for shown in values.get("anchor_log", []):
        entry = rounds.setdefault(shown.round, {"round": shown.round, "workers": []})
        entry["anchors"] = [{"cell": c, "time": t, "score": s} for c, t, s in shown.cells]
    evidence = values.get("evidence", [])
    return {
        "search_task": values.get("search_task"),
        "traversal": values.get("traversal"),
        "rounds": [rounds[k] for k in sorted(rounds)],
        "checks": values.get("checks", []),
        "coverage": [[round(a, 3), round(b, 3), round(step, 3)] for a, b, step in values.get("coverage", [])],
        "occurrences": [
            {"start": round(o.start, 3), "end": round(o.end, 3), "evidence": o.ids, "reading": o.reading}
            for o in occurrences(evidence)
        ],
    }


def _brief(call: dict[str, Any] | None) -> str:
    if not call:
        return ""
    return f"({call['prompt_tokens']:,} tokens, {call['cached_tokens']:,} cached, {call['latency_s']:.2f} s)"


def lines(found: dict[str, Any], repairs: dict[int, list[str]]) -> list[str]:
    """Rounds -> workers -> steps, with each round's repairs where they happened."""
    # None: the run stopped before it had one (its failure is shown above).
    out = [
        f"  {key.replace('_', ' ')}: {one_line(str(found[key]))}"
        for key in ("search_task", "traversal")
        if found[key] is not None
    ]
    checks = {c["round"]: c for c in found["checks"]}
    for rnd in found["rounds"]:
        out.append(f"  round {rnd['round']}: probe {_brief(rnd.get('global_probe'))}")
        out += [f"    {line}" for line in repairs.get(rnd["round"], [])]
        for worker in rnd["workers"]:
            out.append(
                f"    {worker['worker']} -> {worker['target']} [{worker['stop']}]"
                + (f", {worker['invalid_actions']} invalid" if worker["invalid_actions"] else "")
            )
            for step in worker["steps"]:
                cells = f" {step['cells']}" if step["cells"] else ""
                out.append(
                    f"      step {step['index'] + 1}: {step['action']}{cells} on {step['view']} "
                    f"({step['prompt_tokens']:,} tokens, {step['latency_s']:.2f} s): {step['note']}"
                )
        check = checks.get(rnd["round"])
        if check:
            verdict = "sufficient" if check["sufficient"] else "not sufficient"
            out.append(
                f"    uncertainty: {verdict} {_brief(rnd.get('analyze_uncertainty'))}: {check['reasoning'][:160]}"
            )
    coverage = found.get("coverage") or []
    if coverage:
        pieces = ", ".join(f"{format_ts(a)}-{format_ts(b)} every {step:.3g} s" for a, b, step in coverage[:8])
        more = f" and {len(coverage) - 8} more" if len(coverage) > 8 else ""
        out.append(f"  coverage (stretch, seconds between frames seen): {pieces}{more}")
    found_occ = found.get("occurrences") or []
    if found_occ:
        out.append(f"  occurrences: {len(found_occ)} distinct")
        for occ in found_occ:
            out.append(
                f"    {format_ts(occ['start'], 1)}-{format_ts(occ['end'], 1)} "
                f"({len(occ['evidence'])} record(s)): {occ['reading'][:120]}"
            )
    return out


def extras(state: dict[str, Any]) -> dict[str, Any]:
    """What a Video-RLM run reports beyond every agent's answer and cost: its search task, traversal and index."""
    return {
        "search_task": state.get("search_task", ""),
        "traversal": state.get("traversal", ""),
        "index_frames": int(state.get("index_frames") or 0),
        "index_s": round(float(state.get("index_s") or 0.0), 3),
    }
