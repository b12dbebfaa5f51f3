"""Worker, step 2 of 3: ask the model for one action, from a schema holding only the possible ones."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.video_rlm.anchors import anchors_note, picks_record
from videoatlas.agents.video_rlm.nodes.worker_observe import addable_cells, masked_zones, open_cells, render_view
from videoatlas.agents.video_rlm.schemas import flatten_step, worker_step_schema
from videoatlas.agents.video_rlm.state.models import found_in_cell
from videoatlas.agents.video_rlm.state.worker import CellNote, WorkerState
from videoatlas.environment.geometry import Interval
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import EndpointError, ModelReplyError
from videoatlas.runtime.budget import BudgetSpent
from videoatlas.runtime.calls import as_image, ask, choices_block, emit, failed_call_cost, hear, subtitles_by_cell
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Where


def _collected_lines(state: WorkerState) -> str:
    """What is already collected: the run's scratchpad inside this worker's target, then its own finds."""
    run = [(e, "in the scratchpad") for e in state.get("scratchpad") or []]
    mine = [(e, "collected by you") for e in state.get("evidence") or []]
    if not run and not mine:
        return "(nothing yet)"
    return "\n".join(
        f"- @{e.time:.1f} s (cell {found_in_cell(e) or '-'}, starts {e.start:.1f} s, {who}): {e.description}"
        for e, who in [*run, *mine]
    )


def _cell_line(c: CellNote) -> str:
    line = f"{c['index']}: {format_ts(c['start'], 2)}"  # it lasts until the next cell starts
    if c["explored"]:
        return line + " [explored]"
    if not c["available"]:
        line += " [frame unavailable]"
    if c["collected"]:
        line += " [already collected]"
    if c.get("rel") is not None:
        line += f" [rel {min(99, round(100 * float(c['rel'] or 0)))}]"
    return line


async def decide_step(state: WorkerState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Render the view (and a close-up if one was asked for) and get the next action."""
    ctx = runtime.context
    view = state["view"]
    shown, picks = await render_view(ctx, view, masked_zones(state), state["search_task"])
    images = [as_image(shown.image, f"view {view.path or view.kind}")]
    zoom_line = ""
    if state.get("zoom_time") is not None:
        zoom_time = float(state["zoom_time"])  # type: ignore[arg-type]
        shot = await ctx.atlas.azoom(zoom_time)
        images.append(as_image(shot, f"zoom {zoom_time:.2f}"))
        zoom_line = ctx.prompts.note("zoom.note", time=format_ts(zoom_time, 2))
    duration = ctx.atlas.duration
    cells = state["cells"]
    spoken = [(c["index"], Interval(c["start"], c["end"])) for c in cells if not c["explored"]]
    where = Where("worker", state["round"], state["worker"])
    heard = await hear(ctx, [iv for _, iv in spoken], where)
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
        "cells": "\n".join(line for line in [anchors_note(ctx, picks), *(_cell_line(c) for c in cells)] if line),
        "previous": state["summary"],
        "collected": _collected_lines(state),
        "actions": "\n".join(ctx.prompts.note(f"action_{a.lower()}.note") for a in state["allowed"]),
        "subtitles": subtitles_by_cell(heard.subtitles, spoken, state["question"], state["choices"]) or "(none)",
        "zoom": zoom_line,
    }
    open_ids = open_cells(cells)
    expandable = open_ids if "EXPAND" in state["allowed"] or "MARK_PROMISING" in state["allowed"] else []
    schema = worker_step_schema(state["allowed"], open_ids, expandable, addable_cells(cells))
    meta: dict[str, Any] = {"worker": state["worker"], "round": state["round"], "step": len(state["steps"])}
    if picks:
        meta["anchors"] = picks_record(picks)
    try:
        reply, cost = await ask(
            ctx,
            schema,
            "worker",
            "worker",
            images,
            values,
            system="worker.system",
            thinker="worker",
            budgeted=True,
            meta=meta,
        )
    except BudgetSpent as exc:
        emit("worker_budget", worker=state["worker"], reason=str(exc))
        return {"decision": None, "stop": "global-budget", "cost": heard.cost, "repairs": list(heard.repairs)}
    except (ModelReplyError, EndpointError) as exc:
        emit("worker_error", worker=state["worker"], error=str(exc))
        failed = failed_call_cost(exc) + heard.cost
        return {"decision": None, "stop": "model-error", "cost": failed, "repairs": list(heard.repairs)}
    decision = flatten_step(reply.value)
    decision["_prompt_tokens"] = reply.record.prompt_tokens
    decision["_latency_s"] = reply.record.latency_s
    decision["_image_sha"] = shown.image.sha256
    return {"decision": decision, "cost": cost + heard.cost, "repairs": list(heard.repairs)}
