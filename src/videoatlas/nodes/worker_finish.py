"""Worker wrap-up: report what was done, and hand back explored intervals that held no evidence."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.graph.context import AgentContext
from videoatlas.nodes.common import emit
from videoatlas.state.models import WorkerReport, Zone
from videoatlas.state.worker import WorkerState


def empty_views(viewed: list[Zone], evidence_times: list[float]) -> list[Zone]:
    """Viewed intervals with no evidence moment inside: explored and found empty."""
    out = []
    for start, end in viewed:
        if not any(start <= t < end for t in evidence_times):
            out.append((start, end))
    return out


async def finish(state: WorkerState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Dead zones (views without findings) and this worker's report."""
    evidence = state.get("evidence") or []
    times = [e.time for e in evidence]
    target = state["target"]
    viewed = list(state.get("viewed") or [])
    dead = empty_views(viewed, times)
    if state.get("stop") == "model-error":
        dead = []  # a failed step explored nothing for sure
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
    return {"dead_zones": dead, "reports": [report]}
