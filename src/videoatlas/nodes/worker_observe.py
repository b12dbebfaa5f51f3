"""Worker, step 1 of 3: look at the current view and work out which actions are possible now."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime

from videoatlas.environment.atlas import GridView
from videoatlas.environment.geometry import Interval, cell_interval, cell_span, parse_path
from videoatlas.graph.context import AgentContext
from videoatlas.state.models import Target, View, Zone
from videoatlas.state.worker import CellNote, WorkerState

_SPAN_TOLERANCE = 1e-6


def initial_view(target: Target, ctx: AgentContext) -> View:
    """The grid a worker starts from: its cell expanded (clamped to the maximum depth), or its range."""
    if target.path is None:
        return View(kind="range", path=None, start=target.start, end=target.end, depth=None)
    path = parse_path(target.path, ctx.config.k)[: ctx.max_depth]
    iv = cell_interval(ctx.atlas.duration, path, ctx.config.k)
    return View(kind="grid", path="/".join(map(str, path)), start=iv.start, end=iv.end, depth=len(path))


async def render_view(ctx: AgentContext, view: View, left: Sequence[Zone] = ()) -> GridView:
    """The picture of a view, with the grids the worker went back from blacked out (render-cached)."""
    dead = [Interval(start, end) for start, end in left]
    if view.kind == "grid" and view.path is not None:
        return await ctx.atlas.agrid(parse_path(view.path, ctx.config.k), dead)
    return await ctx.atlas.agrid_over(view.interval, dead)


def allowed_actions(state: WorkerState, view: View, grid_cell_span: float, ctx: AgentContext) -> list[str]:
    """The actions this worker has right now (the schema's enum)."""
    cfg = ctx.config
    finest = cell_span(ctx.atlas.duration, ctx.max_depth, cfg.k)
    child_span = grid_cell_span / (cfg.k * cfg.k)
    can_expand = grid_cell_span >= cfg.min_expand_span_s and child_span >= finest * (1 - _SPAN_TOLERANCE)
    if view.kind == "grid" and view.depth is not None:
        can_expand = can_expand and view.depth < ctx.max_depth
    if state["traversal"] == "bfs":
        actions = ["ADD_TO_SCRATCHPAD"]
        if can_expand and view.path is not None:
            actions.append("MARK_PROMISING")
        return [*actions, "FINISHED"]
    actions = []
    if can_expand:
        actions.append("EXPAND")
    if state.get("stack"):
        actions.append("BACKTRACK")
    if state.get("zoom_time") is None:
        actions.append("ZOOM")
    actions += ["INVESTIGATE", "ADD_TO_SCRATCHPAD", "FINISHED"]
    return actions


async def observe(state: WorkerState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Render the view; stop on the step budget or the run's token budget; list the possible actions."""
    ctx = runtime.context
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
    tokens_left = state["tokens_left"]
    spent = state.get("cost")
    if tokens_left is not None and spent is not None and spent.tokens >= tokens_left:
        return {**update, "stop": "global-budget"}
    shown = await render_view(ctx, view, {**state, **update}.get("left") or [])
    notes = [
        CellNote(
            index=cell.index,
            start=cell.interval.start,
            end=cell.interval.end,
            time=float(frame["time"]),
            available=frame["method"] != "unavailable",
        )
        for cell, frame in zip(shown.grid.cells, shown.image.frames, strict=True)
    ]
    merged_state: WorkerState = {**state, **update}  # type: ignore[typeddict-item]
    viewed = [*merged_state["viewed"], (view.start, view.end)]
    return {
        **update,
        "allowed": allowed_actions(merged_state, view, shown.grid.cell_span, ctx),
        "cells": notes,
        "image_sha": shown.image.sha256,
        "viewed": viewed,
    }
