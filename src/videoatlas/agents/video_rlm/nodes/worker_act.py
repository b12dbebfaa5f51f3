"""Worker, step 3 of 3: apply the chosen action to the worker's navigation state.

An action the model picked that cannot be carried out (no cell given, a cell that does not
exist, INVESTIGATE with no direction, nothing before the video's start) is not applied: the step
is spent, counted as invalid, and the next prompt says why.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.video_rlm.nodes.worker_observe import can_open_further, collected_times
from videoatlas.agents.video_rlm.state.models import Marked, Step, View, found_at
from videoatlas.agents.video_rlm.state.worker import CellNote, WorkerState
from videoatlas.environment.geometry import Interval, investigate_interval
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import BadInputError
from videoatlas.runtime.calls import emit, hear, said, with_heard
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Where
from videoatlas.state.models import Evidence, FrameRef, Repair
from videoatlas.state.schemas import distinct


class InvalidAction(Exception):
    """The chosen action cannot be applied in the current state."""


def _cell(decision: dict[str, Any], cells: list[CellNote], action: str) -> CellNote:
    ids = decision.get("cells") or [item["cell"] for item in decision.get("items") or []]
    if not ids:
        raise InvalidAction(f"{action} needs a cell id and none was given")
    index = int(ids[0])
    if not 0 <= index < len(cells):
        raise InvalidAction(f"cell {index} does not exist in this grid")
    if cells[index]["explored"]:
        raise InvalidAction(f"cell {index} is explored (blacked out): choose an open cell")
    return cells[index]


def _child_path(view: View, index: int) -> str | None:
    if view.kind != "grid" or view.path is None:
        return None
    return f"{view.path}/{index}" if view.path else str(index)


def _descend(
    state: WorkerState, update: dict[str, Any], child: View, note: str, cell: CellNote
) -> tuple[dict[str, Any], str, list[int]]:
    """Go into ``child`` from the current view, which is kept on the stack to come back to (BACKTRACK)."""
    update.update(view=child, stack=[*state["stack"], state["view"]])
    return update, note, [cell["index"]]


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
        path = _child_path(view, cell["index"])
        child = View(
            kind="grid" if path is not None else "range",
            path=path,
            start=cell["start"],
            end=cell["end"],
            depth=view.depth + 1 if view.depth is not None and path is not None else None,
        )
        opened = f"opened cell {cell['index']} ({format_ts(cell['start'], 2)}-{format_ts(cell['end'], 2)})"
        return _descend(state, update, child, opened, cell)
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
        looked = f"looked {direction} cell {cell['index']}: {format_ts(window.start)}-{format_ts(window.end)}"
        return _descend(state, update, child, looked, cell)
    if action == "ADD_TO_SCRATCHPAD":
        return _add(state, ctx, decision, update)
    if action == "MARK_PROMISING":
        ids, repeated = distinct(int(c) for c in decision.get("cells") or [])
        if not ids:
            raise InvalidAction("MARK_PROMISING needs at least one cell id")
        if repeated:
            # No backend can make a list distinct while decoding: the repeats are dropped and recorded.
            note = f"marked cells: repeated {', '.join(str(c) for c in repeated)} left out"
            update["repairs"] = [
                Repair(node="worker", round=state["round"], worker=state["worker"], kind="dropped", detail=note)
            ]
        marked = []
        for order, index in enumerate(ids):
            if not 0 <= index < len(cells):
                raise InvalidAction(f"cell {index} does not exist in this grid")
            if cells[index]["explored"]:
                raise InvalidAction(f"cell {index} is explored (blacked out): choose open cells")
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
    """Record the items that can be recorded; say which were left out and why.

    An item on an explored cell, a cell that does not exist, a frame that could not be decoded or
    a moment already collected is left out; the step is invalid only when nothing is left. After
    ZOOM, an item on the zoomed cell keeps the close-up's resolution: the decision sees what the
    worker read.
    """
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
    known = collected_times(state)
    zoom_time = state.get("zoom_time")
    found = state["found"]
    added: list[Evidence] = []
    skipped: list[str] = []
    for item in items:
        index = int(item["cell"])
        why = _why_not_addable(index, cells, [*known, *(e.time for e in added)])
        if why:
            skipped.append(f"cell {index} ({why})")
            continue
        note = cells[index]
        path = _child_path(view, index)
        zoomed = zoom_time is not None and abs(note["time"] - zoom_time) < 1e-6
        spoken = said(ctx)
        # What was said while the cell lasts (a line said across it counts, not only one at its first frame).
        subtitle = spoken.text_for(Interval(note["start"], note["end"]), 200) if spoken is not None else ""
        added.append(
            Evidence(
                id=f"r{state['round']}-{state['worker']}-{found + len(added)}",
                time=note["time"],
                start=note["start"],
                end=note["end"],
                description=str(item.get("description") or "").strip() or "(no description given)",
                confidence=float(item.get("confidence", 0.5)),
                subtitle=subtitle or None,
                frame=FrameRef(
                    video=ctx.atlas.source.identity,
                    time=note["time"],
                    px=ctx.atlas.zoom_box if zoomed else ctx.config.cell_px,
                ),
                **found_at(
                    state["round"],
                    state["worker"],
                    view.depth + 1 if view.depth is not None and path is not None else None,
                    path,
                ),
            )
        )
    if not added:
        # Re-adding what is already collected changes nothing: say so in the next prompt, and count it.
        raise InvalidAction("nothing new: " + "; ".join(skipped))
    update["evidence"] = added
    update["found"] = found + len(added)
    times = ", ".join(format_ts(e.time, 1) for e in added)
    note_text = f"added {len(added)} item(s) to the scratchpad ({times})"
    if skipped:
        note_text += "; left out " + "; ".join(skipped)
        update["repairs"] = [
            Repair(node="worker", round=state["round"], worker=state["worker"], kind="dropped", detail=note_text)
        ]
    return update, note_text, [int(i["cell"]) for i in items]


def _why_not_addable(index: int, cells: list[CellNote], known: list[float]) -> str:
    if not 0 <= index < len(cells):
        return "not in this grid"
    note = cells[index]
    if note["explored"]:
        return "explored"
    if not note["available"]:
        return "no frame"
    if any(abs(note["time"] - t) <= 0.05 for t in known):
        return "already collected"
    return ""


async def act(state: WorkerState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Apply the decision, record the step, and carry a one-sentence summary forward."""
    ctx = runtime.context
    decision = state["decision"] or {}
    action = str(decision.get("action"))
    valid = True
    # What was said in the view, as the decision heard it (read again: a resumed run's process holds nothing yet).
    spoken = [Interval(c["start"], c["end"]) for c in state["cells"] if not c["explored"]]
    heard = await hear(ctx, spoken, Where("worker", state["round"], state["worker"]))
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
    # The view the step was taken on is searched through when the worker leaves it as done (FINISHED,
    # BACKTRACK, MARK_PROMISING) or when nothing in it opens finer: then one look showed all of it.
    view: View = state["view"]
    done = action in ("FINISHED", "BACKTRACK", "MARK_PROMISING") and valid
    if done or state["traversal"] == "bfs" or not can_open_further(state["allowed"]):
        update["examined"] = [*(state.get("examined") or []), (view.start, view.end)]
    said = str(decision.get("summary") or "").strip()
    update["summary"] = f"{action}: {note}" + (f". You noted: {said}" if said else "")
    update["steps"] = [*state["steps"], step]
    update["decision"] = None
    emit("worker_step", worker=state["worker"], step=step.index, action=action, note=note, valid=valid)
    return with_heard(update, heard)
