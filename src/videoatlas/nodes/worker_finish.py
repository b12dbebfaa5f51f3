"""Worker wrap-up: report what was done, and hand back explored intervals that held no evidence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime

from videoatlas.environment.geometry import cell_interval, parse_path
from videoatlas.graph.context import AgentContext
from videoatlas.nodes.common import emit
from videoatlas.state.models import WorkerReport, Zone
from videoatlas.state.worker import WorkerState


def searched_views(viewed: list[Zone], keep: Sequence[Zone] = ()) -> list[Zone]:
    """Viewed intervals minus ``keep``: cells flagged promising were seen but not searched."""
    out: list[Zone] = []
    for start, end in viewed:
        pieces = [(start, end)]
        for k_start, k_end in keep:
            pieces = [
                part for a, b in pieces for part in ((a, min(b, k_start)), (max(a, k_end), b)) if part[1] > part[0]
            ]
        out.extend(pieces)
    return out


def empty_views(viewed: list[Zone], evidence_times: list[float], keep: Sequence[Zone] = ()) -> list[Zone]:
    """Viewed intervals with no evidence moment inside (explored and found empty), minus ``keep``."""
    empty = [(start, end) for start, end in viewed if not any(start <= t < end for t in evidence_times)]
    return searched_views(empty, keep)


async def finish(state: WorkerState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Dead zones (views without findings) and this worker's report."""
    evidence = state.get("evidence") or []
    times = [e.time for e in evidence]
    target = state["target"]
    viewed = list(state.get("viewed") or [])
    ctx = runtime.context
    marked = [
        cell_interval(ctx.atlas.duration, parse_path(m.path, ctx.config.k), ctx.config.k)
        for m in state.get("frontier") or []
    ]
    keep = [(iv.start, iv.end) for iv in marked]
    dead = empty_views(viewed, times, keep)
    searched = searched_views(viewed, keep)
    if state.get("stop") == "model-error":
        dead = searched = []  # a failed step explored nothing for sure
    report = WorkerReport(
        worker=state["worker"],
        round=state["round"],
        target=target,
        steps=state.get("steps") or [],
        stop=state.get("stop") or "finished",
        evidence_ids=[e.id for e in evidence],
        invalid_actions=state.get("invalid_actions", 0),
    )
    emit(
        "worker_done",
        worker=state["worker"],
        stop=report.stop,
        evidence=len(evidence),
        steps=len(report.steps),
    )
    return {"dead_zones": dead, "searched": searched, "reports": [report]}
