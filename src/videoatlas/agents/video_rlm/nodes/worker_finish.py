"""Worker wrap-up: report what was done, and hand back explored intervals that held no evidence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.video_rlm.coverage import view_step
from videoatlas.agents.video_rlm.nodes.worker_observe import collected_times
from videoatlas.agents.video_rlm.state.models import Marked, WorkerReport
from videoatlas.agents.video_rlm.state.worker import WorkerState
from videoatlas.environment.geometry import cell_interval, parse_path
from videoatlas.runtime.calls import emit
from videoatlas.runtime.context import AgentContext
from videoatlas.state.models import Zone


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
    """Dead zones and coverage from what was searched through; an unfinished view back on the frontier.

    Coverage records each examined view with its step (seconds between its grid's frames): a cell
    flagged promising was still seen at that step, so it counts as covered there, though not searched.

    Only views the worker examined count (left by FINISHED or BACKTRACK, or seen whole: a leaf, a BFS
    scan). A worker stopped by a budget or a failed call hands the view it was still exploring back to
    the Master as an ``unfinished`` frontier entry, and its parent views stay open: a budget stop
    while drilling never blacks out ground nobody searched.
    """
    evidence = state.get("evidence") or []
    times = collected_times(state)  # a view holding any collected moment, this worker's or not, is not dead
    target = state["target"]
    examined = list(state.get("examined") or [])
    ctx = runtime.context
    flagged = [m for m in state.get("frontier") or [] if m.path is not None]
    keep = [_span(ctx, m.path) for m in flagged if m.path is not None]
    dead = empty_views(examined, times, keep)
    searched = searched_views(examined, keep)
    stop = state.get("stop") or "finished"
    frontier: list[Marked] = []
    view = state.get("view")
    if stop != "finished" and view is not None and (view.start, view.end) not in examined:
        frontier.append(
            Marked(
                round=state["round"],
                worker=state["worker"],
                order=len(flagged),
                path=view.path if view.kind == "grid" else None,
                start=None if view.kind == "grid" else view.start,
                end=None if view.kind == "grid" else view.end,
                reason="unfinished",
            )
        )
    report = WorkerReport(
        worker=state["worker"],
        round=state["round"],
        target=target,
        steps=state.get("steps") or [],
        stop=stop,
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
    cells = ctx.config.k * ctx.config.k
    coverage = [(start, end, view_step(start, end, cells)) for start, end in examined]
    return {
        "dead_zones": dead,
        "searched": searched,
        "coverage": coverage,
        "reports": [report],
        "frontier": frontier,
    }


def _span(ctx: AgentContext, path: str) -> Zone:
    iv = cell_interval(ctx.atlas.duration, parse_path(path, ctx.config.k), ctx.config.k)
    return (iv.start, iv.end)
