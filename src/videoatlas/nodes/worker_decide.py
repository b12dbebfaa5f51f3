"""Worker, step 2 of 3: ask the model for one action, from a schema holding only the possible ones."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.environment.geometry import Interval
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import EndpointError, ModelReplyError
from videoatlas.graph.context import AgentContext
from videoatlas.nodes.common import as_image, ask, choices_block, emit, failed_call_cost
from videoatlas.nodes.worker_observe import render_view
from videoatlas.state.schemas import worker_step_schema
from videoatlas.state.worker import CellNote, WorkerState

ACTION_HELP = {
    "EXPAND": "EXPAND: open one cell as a finer grid of its own interval (give its id).",
    "BACKTRACK": "BACKTRACK: go back to the grid you came from.",
    "ZOOM": "ZOOM: see one cell's frame at full resolution, to read small text or check details (give its id).",
    "INVESTIGATE": "INVESTIGATE: see a grid of the moments just before or just after one cell (give its id and "
    "a direction); for when you found the anchor and the answer follows or precedes it.",
    "ADD_TO_SCRATCHPAD": "ADD_TO_SCRATCHPAD: record cells that show evidence for the question.",
    "MARK_PROMISING": "MARK_PROMISING: flag cells worth opening in a later round (give their ids).",
    "FINISHED": "FINISHED: this region holds nothing more that is relevant.",
}


def _left(cell: CellNote, state: WorkerState) -> bool:
    """Whether the cell lies inside a grid this worker already searched and went back from."""
    return any(start <= cell["start"] and cell["end"] <= end for start, end in state.get("left") or [])


def _collected_lines(state: WorkerState) -> str:
    mine = state.get("evidence") or []
    if not mine:
        return "(nothing yet)"
    return "\n".join(f"- @{e.time:.1f} s (cell {e.cell or '-'}, starts {e.start:.1f} s): {e.description}" for e in mine)


async def decide_step(state: WorkerState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Render the view (and a close-up if one was asked for) and get the next action."""
    ctx = runtime.context
    view = state["view"]
    shown = await render_view(ctx, view, state.get("left") or [])
    images = [as_image(shown.image, f"view {view.path or view.kind}")]
    zoom_line = ""
    if state.get("zoom_time") is not None:
        zoom_time = float(state["zoom_time"])  # type: ignore[arg-type]
        shot = await ctx.atlas.azoom(zoom_time)
        images.append(as_image(shot, f"zoom {zoom_time:.2f}"))
        zoom_line = f"The second image is a close-up of the frame at {format_ts(zoom_time, 2)}."
    duration = ctx.atlas.duration
    subtitles = ctx.subtitles.text_for(Interval(view.start, view.end)) if ctx.subtitles else ""
    values = {
        "search_task": state["search_task"],
        "question": state["question"],
        "choices": choices_block(state["choices"]),
        "start": format_ts(view.start, 1),
        "end": format_ts(view.end, 1),
        "pct": f"{100 * view.start / duration:.0f}%",
        "duration": format_ts(duration, 0),
        "depth": view.depth if view.depth is not None else "custom range",
        "k": ctx.config.k,
        "cells": "\n".join(
            f"{c['index']}: {format_ts(c['start'], 2)}-{format_ts(c['end'], 2)}"
            + ("" if c["available"] else " [frame unavailable]")
            + (" [searched: you went back from it]" if _left(c, state) else "")
            for c in state["cells"]
        ),
        "previous": state["summary"],
        "collected": _collected_lines(state),
        "actions": "\n".join(ACTION_HELP[a] for a in state["allowed"]),
        "subtitles": subtitles or "(none)",
        "zoom": zoom_line,
    }
    schema = worker_step_schema(state["allowed"], ctx.config.k * ctx.config.k)
    meta = {"worker": state["worker"], "round": state["round"], "step": len(state["steps"])}
    try:
        reply, cost = await ask(ctx, schema, "worker", "worker", images, values, role="worker", meta=meta)
    except (ModelReplyError, EndpointError) as exc:
        emit("worker_error", worker=state["worker"], error=str(exc))
        return {"decision": None, "stop": "model-error", "cost": failed_call_cost(exc, "worker")}
    decision = reply.value.model_dump()
    decision["_prompt_tokens"] = reply.record.prompt_tokens
    decision["_latency_s"] = reply.record.latency_s
    decision["_image_sha"] = shown.image.sha256
    return {"decision": decision, "cost": cost}
