"""Every worker action in a whole run, read back from the trace, with a scripted model choosing the actions.

The runs are real: the counter video decoded and drawn, every call and step traced to SQLite, the
trace read back as ``trace`` and the run page read it. The model is scripted, so what is checked is
what each action does (the next step's view, the images it is shown, the evidence it files, the next
round's targets), whatever a model would choose. With K = 2 the 80 s video's root cells last 20 s,
depth-1 cells 5 s and depth-2 cells 1.25 s: each can still be opened.

(These replace runs against the stand-in, where which actions were taken was the stand-in's choice.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_helpers import ScriptedChat, default_reply, step
from db_helpers import sqlite_url
from videoatlas.inspect import load_trace
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import RunResult, run_question
from videoatlas.runtime.context import RunConfig

pytestmark = pytest.mark.e2e
QUESTION = "What number is shown?"
CHOICES = ["one", "two"]


def worker_script(moves: list[dict[str, Any]], probe: list[int]) -> Callable[..., Any]:
    """The probe ranks root cells ``probe``; worker steps take ``moves`` in turn (one worker at a time), then finish."""
    queue = iter(moves)

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "GlobalProbe":
            return {"cells": probe[: schema["properties"]["cells"]["minItems"]], "reason": "these"}
        if name == "WorkerStep":
            return next(queue, step("FINISHED"))
        return default_reply(name, text, schema)

    return script


async def traced_run(
    video: Path, tmp: Path, script: Callable[..., Any], **settings: Any
) -> tuple[RunResult, dict[str, Any]]:
    config = RunConfig.of(**{"k": 2, "cell_px": 64, "workers": 1, "rounds": 1, "traversal": "dfs", **settings})
    db = sqlite_url(tmp / "runs.db")
    chat = ScriptedChat(script=script)
    result = await run_question(
        video, QUESTION, CHOICES, config, EndpointSettings(model="scripted"), chat_model=chat, db_url=db, run_id="act"
    )
    return result, await load_trace(result.run_id, db)


def _workers(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [w for r in trace["detail"]["rounds"] for w in r["workers"]]


def _images_seen(trace: dict[str, Any], worker: str, step_no: int) -> int:
    (call,) = [c for c in trace["calls"] if c["worker"] == worker and c["step"] == step_no and c["node"] == "worker"]
    return len(call["images"])


def _with(trace: dict[str, Any], *actions: str) -> dict[str, Any]:
    """The first worker whose valid steps hold ``actions`` in this order."""
    for worker in _workers(trace):
        done = [s["action"] for s in worker["steps"] if s["valid"]]
        it = iter(done)
        if all(a in it for a in actions):
            return worker
    raise AssertionError(f"no worker did {actions}: {[[s['action'] for s in w['steps']] for w in _workers(trace)]}")


def _step(worker: dict[str, Any], action: str, after: int = -1) -> int:
    return next(i for i, s in enumerate(worker["steps"]) if s["action"] == action and s["valid"] and i > after)


def _evidence(trace: dict[str, Any], worker: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in trace["evidence"] if e["id"] in worker["evidence"]]


async def test_zoom_shows_the_close_up_beside_the_grid_then_add_files_it_and_finish_ends(
    counter_video: Path, tmp_path: Path
) -> None:
    # Root cell 1 (20-40 s): its cell 2 is 30-35 s.
    adds = [{"cell": 2, "description": "a number, read in the close-up", "confidence": 0.9}]
    script = worker_script([step("ZOOM", [2]), step("ADD_TO_SCRATCHPAD", [2], adds)], probe=[1])
    _, trace = await traced_run(counter_video, tmp_path, script)
    worker = _with(trace, "ZOOM", "ADD_TO_SCRATCHPAD", "FINISHED")
    zoom = _step(worker, "ZOOM")
    # ZOOM's effect: the next step is shown the close-up beside the grid.
    assert _images_seen(trace, worker["worker"], zoom) == 1
    assert _images_seen(trace, worker["worker"], zoom + 1) == 2
    assert worker["steps"][zoom + 1]["action"] == "ADD_TO_SCRATCHPAD"
    (item,) = _evidence(trace, worker)
    assert 30.0 <= item["time"] < 35.0 and item["description"] == "a number, read in the close-up"
    # FINISHED ends the worker; nothing is added twice.
    assert worker["steps"][-1]["action"] == "FINISHED" and worker["stop"] == "finished"
    assert not [s for w in _workers(trace) for s in w["steps"] if "nothing new" in s["note"]]


async def test_expand_opens_a_finer_grid_and_backtrack_returns_to_the_one_it_came_from(
    counter_video: Path, tmp_path: Path
) -> None:
    adds = [{"cell": 1, "description": "a number in the finer grid", "confidence": 0.9}]
    moves = [step("EXPAND", [0]), step("BACKTRACK"), step("EXPAND", [3]), step("ADD_TO_SCRATCHPAD", [1], adds)]
    _, trace = await traced_run(counter_video, tmp_path, worker_script(moves, probe=[1]))
    worker = _with(trace, "EXPAND", "BACKTRACK", "EXPAND", "ADD_TO_SCRATCHPAD")
    steps = worker["steps"]
    first = _step(worker, "EXPAND")
    back = _step(worker, "BACKTRACK", first)
    second = _step(worker, "EXPAND", back)
    parent = steps[first]["view"]
    # EXPAND opens the chosen cell as a finer grid; BACKTRACK returns to the grid it came from.
    assert parent == "1"
    assert steps[first + 1]["view"] == f"{parent}/{steps[first]['cells'][0]}" == "1/0"
    assert steps[back + 1]["view"] == parent
    assert steps[second + 1]["view"] == f"{parent}/{steps[second]['cells'][0]}" == "1/3"
    # Cell 1 of 1/3 (35-40 s, cells of 1.25 s) is 36.25-37.5 s.
    assert [round(e["time"], 2) for e in _evidence(trace, worker) if not 36.25 <= e["time"] < 37.5] == []
    assert len(_evidence(trace, worker)) == 1


async def test_investigate_after_a_cell_at_the_edge_of_the_view_opens_a_window_past_it(
    counter_video: Path, tmp_path: Path
) -> None:
    adds = [{"cell": 1, "description": "the number right after", "confidence": 0.8}]
    moves = [step("INVESTIGATE", [3], direction="after"), step("ADD_TO_SCRATCHPAD", [1], adds)]
    _, trace = await traced_run(counter_video, tmp_path, worker_script(moves, probe=[1]))
    worker = _with(trace, "INVESTIGATE", "ADD_TO_SCRATCHPAD")
    steps = worker["steps"]
    at = _step(worker, "INVESTIGATE")
    # INVESTIGATE's effect: a grid over the anchor cell (35-40 s, the last of the view) and what follows it,
    # past the view's end: a time range, not a cell path.
    start, end = (float(x) for x in steps[at + 1]["view"].split("-"))
    assert start == pytest.approx(35.0, abs=0.1) and end > 40.0
    (item,) = _evidence(trace, worker)
    assert start <= item["time"] < end


async def test_bfs_marks_promising_cells_and_a_later_round_sends_workers_there(
    counter_video: Path, tmp_path: Path
) -> None:
    # Root cells paced by the probe (coverage-first off): the mode in which BFS workers mark cells of root cells.
    script = worker_script([step("MARK_PROMISING", [1, 2])], probe=[1, 0, 2, 3])
    _, trace = await traced_run(
        counter_video, tmp_path, script, traversal="bfs", rounds=3, bfs_resolution_s=0, bfs_cells=1
    )
    marker = _with(trace, "MARK_PROMISING")
    step_ = marker["steps"][_step(marker, "MARK_PROMISING")]
    marked = {f"{marker['target']}/{c}" for c in step_["cells"]}
    assert marked == {"1/1", "1/2"} and marker["stop"] == "finished"
    (marked_in,) = [r["round"] for r in trace["detail"]["rounds"] if marker in r["workers"]]
    # MARK_PROMISING's effect: a later round sends workers to the marked cells.
    later = [
        w for r in trace["detail"]["rounds"] if r["round"] > marked_in for w in r["workers"] if w["target"] in marked
    ]
    assert {w["target"] for w in later} == marked, [w["target"] for w in _workers(trace)]
