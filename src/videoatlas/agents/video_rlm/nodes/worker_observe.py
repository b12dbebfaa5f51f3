"""Worker, step 1 of 3: look at the current view and work out which actions are possible now."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.video_rlm.anchors import grid_picks
from videoatlas.agents.video_rlm.settings import max_depth, rlm
from videoatlas.agents.video_rlm.state.models import Target, View
from videoatlas.agents.video_rlm.state.worker import CellNote, WorkerState
from videoatlas.environment.atlas import CellPick, GridView
from videoatlas.environment.geometry import Interval, cell_interval, cell_span, covered_fraction, parse_path
from videoatlas.runtime.context import AgentContext
from videoatlas.state.models import Zone

_SPAN_TOLERANCE = 1e-6
_SAME_MOMENT_S = 0.05
"""A cell whose frame is this close to a collected moment shows that moment again."""


def initial_view(target: Target, ctx: AgentContext) -> View:
    """The grid a worker starts from: its cell expanded (clamped to the maximum depth), or its range."""
    if target.path is None:
        return View(kind="range", path=None, start=target.start, end=target.end, depth=None)
    path = parse_path(target.path, ctx.config.k)[: max_depth(ctx)]
    iv = cell_interval(ctx.atlas.duration, path, ctx.config.k)
    return View(kind="grid", path="/".join(map(str, path)), start=iv.start, end=iv.end, depth=len(path))


async def render_view(
    ctx: AgentContext, view: View, masked: Sequence[Zone] = (), search_task: str = ""
) -> tuple[GridView, dict[int, CellPick]]:
    """The picture of a view with ``masked`` intervals blacked out (explored by the run, or left by this worker).

    A grid of the upper levels carries the run's anchors for ``search_task`` (see :mod:`..anchors`), returned too.
    """
    dead = [Interval(start, end) for start, end in masked]
    if view.kind == "grid" and view.path is not None:
        path = parse_path(view.path, ctx.config.k)
        picks = await grid_picks(ctx, search_task, path)
        return await ctx.atlas.agrid(path, dead, picks), picks
    return await ctx.atlas.agrid_over(view.interval, dead), {}


def masked_zones(state: WorkerState) -> list[Zone]:
    """What this worker's grids show blacked out: the run's dead zones and the grids it went back from."""
    return [*(state.get("explored") or []), *(state.get("left") or [])]


def _inside(start: float, end: float, zones: Sequence[Zone]) -> bool:
    return covered_fraction(Interval(start, end), [Interval(a, b) for a, b in zones]) >= 0.999


def collected_times(state: WorkerState) -> list[float]:
    """Moments already in the scratchpad: the run's (inside this worker's target) and this worker's own."""
    return [e.time for e in [*(state.get("scratchpad") or []), *(state.get("evidence") or [])]]


def open_cells(cells: Sequence[CellNote]) -> list[int]:
    """Cells not explored yet (by the run, or by this worker before it went back)."""
    return [c["index"] for c in cells if not c["explored"]]


def addable_cells(cells: Sequence[CellNote]) -> list[int]:
    """Open cells whose frame can be recorded and is not in the scratchpad already."""
    return [c["index"] for c in cells if not c["explored"] and c["available"] and not c["collected"]]


def allowed_actions(state: WorkerState, view: View, grid_cell_span: float, ctx: AgentContext) -> list[str]:
    """The actions this worker has right now (the schema's variants).

    An action that needs a cell is offered only when some cell qualifies: an open one to ZOOM or
    INVESTIGATE, an open one that can be opened to EXPAND or MARK_PROMISING, one not yet collected
    to ADD_TO_SCRATCHPAD.
    """
    cfg = ctx.config
    settings = rlm(ctx)
    finest = cell_span(ctx.atlas.duration, max_depth(ctx), cfg.k)
    child_span = grid_cell_span / (cfg.k * cfg.k)
    can_expand = grid_cell_span >= settings.min_expand_span_s and child_span >= finest * (1 - _SPAN_TOLERANCE)
    if view.kind == "grid" and view.depth is not None:
        can_expand = can_expand and view.depth < max_depth(ctx)
    cells = state.get("cells") or []
    any_open = bool(open_cells(cells))
    can_expand = can_expand and any_open
    can_add = bool(addable_cells(cells))
    actions = []
    if state["traversal"] == "bfs":
        if can_add:
            actions.append("ADD_TO_SCRATCHPAD")
        if can_expand and view.path is not None:
            actions.append("MARK_PROMISING")
        return [*actions, "FINISHED"]
    if can_expand:
        actions.append("EXPAND")
    if state.get("stack"):
        actions.append("BACKTRACK")
    if state.get("zoom_time") is None and any_open:
        actions.append("ZOOM")
    if any_open:
        actions.append("INVESTIGATE")
    if can_add:
        actions.append("ADD_TO_SCRATCHPAD")
    return [*actions, "FINISHED"]


def can_open_further(allowed: Sequence[str]) -> bool:
    """Whether the view still has finer grids below it (a leaf, once looked at, has been seen whole)."""
    return "EXPAND" in allowed or "MARK_PROMISING" in allowed


async def observe(state: WorkerState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Render the view; stop on the step budget; list the possible actions."""
    ctx = runtime.context
    ctx.ledger.begin_round(state["round"], state["spent"])
    update: dict[str, Any] = {}
    if "view" not in state:
        view = initial_view(state["target"], ctx)
        update = {
            "view": view,
            "stack": [],
            "steps": [],
            "summary": "none yet: this is the first step",
            "zoom_time": None,
            "invalid_actions": 0,
            "viewed": [],
            "examined": [],
            "left": [],
            "found": 0,
            "stop": "",
            "decision": None,
        }
        steps_taken = 0
    else:
        view = state["view"]
        steps_taken = len(state["steps"])
    if steps_taken >= state["budget"]:
        return {**update, "stop": "budget"}
    merged_state: WorkerState = {**state, **update}  # type: ignore[typeddict-item]
    masked = masked_zones(merged_state)
    shown, picks = await render_view(ctx, view, masked, state["search_task"])
    collected = collected_times(merged_state)
    notes = [
        CellNote(
            index=cell.index,
            start=cell.interval.start,
            end=cell.interval.end,
            time=float(frame["time"]),
            available=frame["method"] != "unavailable",
            explored=_inside(cell.interval.start, cell.interval.end, masked),
            collected=any(abs(float(frame["time"]) - t) <= _SAME_MOMENT_S for t in collected),
            rel=picks[cell.index].score if cell.index in picks else None,
        )
        for cell, frame in zip(shown.grid.cells, shown.image.frames, strict=True)
    ]
    merged_state = {**merged_state, "cells": notes}
    return {
        **update,
        "allowed": allowed_actions(merged_state, view, shown.grid.cell_span, ctx),
        "cells": notes,
        "image_sha": shown.image.sha256,
        "viewed": [*merged_state["viewed"], (view.start, view.end)],
    }
