"""Worker, step 3 of 3: apply the chosen action to the worker's navigation state.

An action the model picked that cannot be carried out (no cell given, a cell that does not
exist, INVESTIGATE with no direction, nothing before the video's start) is not applied: the step
is spent, counted as invalid, and the next prompt says why.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.environment.geometry import Interval, investigate_interval
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import BadInputError
from videoatlas.graph.context import AgentContext
from videoatlas.nodes.common import emit
from videoatlas.state.models import Evidence, FrameRef, Marked, Step, View
from videoatlas.state.worker import CellNote, WorkerState


class InvalidAction(Exception):
    """The chosen action cannot be applied in the current state."""


def _cell(decision: dict[str, Any], cells: list[CellNote], action: str) -> CellNote:
    ids = decision.get("cells") or [item["cell"] for item in decision.get("items") or []]
    if not ids:
        raise InvalidAction(f"{action} needs a cell id and none was given")
    index = int(ids[0])
    if not 0 <= index < len(cells):
        raise InvalidAction(f"cell {index} does not exist in this grid")
    return cells[index]


def _child_path(view: View, index: int) -> str | None:
    if view.kind != "grid" or view.path is None:
        return None
    return f"{view.path}/{index}" if view.path else str(index)


def apply_action(state: WorkerState, ctx: AgentContext) -> tuple[dict[str, Any], str, list[int]]:
    """The state update for the decision, a note on what happened, and the cells it touched."""
    decision = state["decision"] or {}
    action = str(decision.get("action"))
    view: View = state["view"]
    cells = state["cells"]
    update: dict[str, Any] = {"zoom_time": None}
    if action not in state["allowed"]:
        raise InvalidAction(f"{action} is not available here")
    if action == "EXPAND":
        cell = _cell(decision, cells, action)
        if any(start <= cell["start"] and cell["end"] <= end for start, end in state.get("left") or []):
            raise InvalidAction(f"cell {cell['index']} was already searched: you went back from it")
        path = _child_path(view, cell["index"])
        child = View(
            kind="grid" if path is not None else "range",
            path=path,
            start=cell["start"],
            end=cell["end"],
            depth=view.depth + 1 if view.depth is not None and path is not None else None,
        )
        update.update(view=child, stack=[*state["stack"], view])
        return (
            update,
            f"opened cell {cell['index']} ({format_ts(cell['start'], 2)}-{format_ts(cell['end'], 2)})",
            [cell["index"]],
        )
    if action == "BACKTRACK":
        if not state["stack"]:
            raise InvalidAction("there is nothing to go back to")
        # The grid left behind was searched: it is shown blacked out from now on, so it is not opened again.
        left = [*state.get("left", []), (view.start, view.end)]
        update.update(view=state["stack"][-1], stack=state["stack"][:-1], left=left)
        return update, "went back to the previous grid (the one left is now shown blacked out)", []
    if action == "ZOOM":
        cell = _cell(decision, cells, action)
        update["zoom_time"] = cell["time"]
        return update, f"zoomed into cell {cell['index']} at {format_ts(cell['time'], 2)}", [cell["index"]]
    if action == "INVESTIGATE":
        cell = _cell(decision, cells, action)
        direction = decision.get("direction")
        if direction not in ("before", "after"):
            raise InvalidAction("INVESTIGATE needs the direction 'before' or 'after'")
        try:
            # As long as the view it was opened from: what follows (precedes) the anchor at the same scale,
            # so a second INVESTIGATE moves on instead of zooming into ever shorter windows.
            window = investigate_interval(
                ctx.atlas.duration,
                Interval(cell["start"], cell["end"]),
                direction,
                window_s=view.end - view.start,
                k=ctx.config.k,
            )
        except BadInputError as exc:
            raise InvalidAction(str(exc)) from None
        child = View(kind="investigate", path=None, start=window.start, end=window.end, depth=None)
        update.update(view=child, stack=[*state["stack"], view])
        return (
            update,
            f"looked {direction} cell {cell['index']}: {format_ts(window.start)}-{format_ts(window.end)}",
            [cell["index"]],
        )
    if action == "ADD_TO_SCRATCHPAD":
        return _add(state, ctx, decision, update)
    if action == "MARK_PROMISING":
        ids = [int(c) for c in decision.get("cells") or []]
        if not ids:
            raise InvalidAction("MARK_PROMISING needs at least one cell id")
        marked = []
        for order, index in enumerate(ids):
            if not 0 <= index < len(cells):
                raise InvalidAction(f"cell {index} does not exist in this grid")
            path = _child_path(view, index)
            if path is not None:
                marked.append(Marked(round=state["round"], worker=state["worker"], order=order, path=path))
        update["frontier"] = marked
        update["stop"] = "finished"
        return update, f"marked cells {ids} as promising", ids
    if action == "FINISHED":
        update["stop"] = "finished"
        return update, "finished: nothing more here", []
    raise InvalidAction(f"unknown action {action}")


def _add(
    state: WorkerState, ctx: AgentContext, decision: dict[str, Any], update: dict[str, Any]
) -> tuple[dict[str, Any], str, list[int]]:
    view: View = state["view"]
    cells = state["cells"]
    items = list(decision.get("items") or [])
    if not items:
        items = [
            {"cell": c, "description": decision.get("summary", ""), "confidence": 0.5}
            for c in decision.get("cells") or []
        ]
    if not items:
        raise InvalidAction("ADD_TO_SCRATCHPAD needs at least one item or cell")
    known = {(e.cell, round(e.time, 3)) for e in state.get("evidence") or []}
    found = state["found"]
    added: list[Evidence] = []
    for item in items:
        index = int(item["cell"])
        if not 0 <= index < len(cells):
            raise InvalidAction(f"cell {index} does not exist in this grid")
        note = cells[index]
        path = _child_path(view, index)
        if (path, round(note["time"], 3)) in known or not note["available"]:
            continue
        subtitle = ctx.subtitles.text_for(Interval(note["time"], note["time"]), 200) if ctx.subtitles else ""
        added.append(
            Evidence(
                id=f"r{state['round']}-{state['worker']}-{found + len(added)}",
                time=note["time"],
                start=note["start"],
                end=note["end"],
                depth=view.depth + 1 if view.depth is not None and path is not None else None,
                cell=path,
                description=str(item.get("description") or "").strip() or "(no description given)",
                confidence=float(item.get("confidence", 0.5)),
                subtitle=subtitle or None,
                frame=FrameRef(video=ctx.atlas.source.identity, time=note["time"], px=ctx.config.cell_px),
                round=state["round"],
                worker=state["worker"],
            )
        )
        known.add((path, round(note["time"], 3)))
    if not added:
        # Re-adding what is already collected changes nothing: say so in the next prompt, and count it.
        raise InvalidAction("nothing new: every item given is already in your collected evidence or has no frame")
    update["evidence"] = added
    update["found"] = found + len(added)
    times = ", ".join(format_ts(e.time, 1) for e in added) or "nothing new"
    return update, f"added {len(added)} item(s) to the scratchpad ({times})", [int(i["cell"]) for i in items]


async def act(state: WorkerState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Apply the decision, record the step, and carry a one-sentence summary forward."""
    ctx = runtime.context
    decision = state["decision"] or {}
    action = str(decision.get("action"))
    valid = True
    try:
        update, note, touched = apply_action(state, ctx)
    except InvalidAction as exc:
        valid = False
        update, note, touched = {"zoom_time": None}, f"{action} could not be done: {exc}", []
        update["invalid_actions"] = state["invalid_actions"] + 1
    step = Step(
        index=len(state["steps"]),
        view=state["view"],
        action=action,
        cells=touched,
        note=note,
        image_sha=str(decision.get("_image_sha", "")),
        prompt_tokens=int(decision.get("_prompt_tokens", 0)),
        latency_s=float(decision.get("_latency_s", 0.0)),
        valid=valid,
    )
    said = str(decision.get("summary") or "").strip()
    update["summary"] = f"{action}: {note}" + (f". You noted: {said}" if said else "")
    update["steps"] = [*state["steps"], step]
    update["decision"] = None
    emit("worker_step", worker=state["worker"], step=step.index, action=action, note=note, valid=valid)
    return update
