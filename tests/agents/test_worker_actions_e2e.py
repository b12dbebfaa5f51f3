"""Every worker action, end to end: real runs over HTTP against the stand-in, read back from the trace.

The video (``action_video.py``) puts small print under a banner (ZOOM), a code card shown for a
quarter of a second beside a banner that also appears alone (EXPAND, BACKTRACK), and a sign at
the very end of its root cell with the answer right after it (INVESTIGATE). Each run is traced to
SQLite; each action is checked in the trace together with what it did to the worker's state.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from action_video import QUESTIONS, write_action_video
from db_helpers import sqlite_url
from videoatlas.inspect import load_trace
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import RunResult, run_question
from videoatlas.runtime.context import RunConfig
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def action_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_action_video(tmp_path_factory.mktemp("actions") / "actions.mp4")


@pytest.fixture(scope="module")
def standin() -> Iterator[RunningServer]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield server


async def _run(
    video: Path, server: RunningServer, key: str, db: str, traversal: str = "dfs", **settings: Any
) -> tuple[RunResult, dict[str, Any]]:
    question, choices, answer = QUESTIONS[key]
    config = RunConfig.of(k=4, workers=8, traversal=traversal, rounds=3, **settings)
    endpoint = EndpointSettings(base_url=server.base_url, model="")
    result = await run_question(video, question, choices, config, endpoint, db_url=db, run_id=f"act-{key}-{traversal}")
    assert result.answer == choices[answer], (key, result.reasoning)
    return result, await load_trace(result.run_id, db)


def _workers(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [w for r in trace["detail"]["rounds"] for w in r["workers"]]


def _images_seen(trace: dict[str, Any], worker: str, step: int) -> int:
    (call,) = [c for c in trace["calls"] if c["worker"] == worker and c["step"] == step and c["node"] == "worker"]
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


async def test_zoom_reads_small_print_then_add_and_finish(
    action_video: Path, standin: RunningServer, tmp_path: Path
) -> None:
    _, trace = await _run(action_video, standin, "zoom", sqlite_url(tmp_path / "runs.db"))
    worker = _with(trace, "ZOOM", "ADD_TO_SCRATCHPAD", "FINISHED")
    zoom = _step(worker, "ZOOM")
    # ZOOM's effect: the next step is shown the close-up beside the grid, and reads what the grid could not.
    assert _images_seen(trace, worker["worker"], zoom) == 1
    assert _images_seen(trace, worker["worker"], zoom + 1) == 2
    assert worker["steps"][zoom + 1]["action"] == "ADD_TO_SCRATCHPAD"
    (item,) = _evidence(trace, worker)
    assert 48.0 <= item["time"] < 52.0 and "QZ-7781" in item["description"].replace(" ", "")
    # FINISHED ends the worker; nothing is added twice.
    assert worker["steps"][-1]["action"] == "FINISHED" and worker["stop"] == "finished"
    assert not [s for w in _workers(trace) for s in w["steps"] if "nothing new" in s["note"]]


async def test_expand_and_backtrack_reach_a_quarter_second_card(
    action_video: Path, standin: RunningServer, tmp_path: Path
) -> None:
    _, trace = await _run(action_video, standin, "expand", sqlite_url(tmp_path / "runs.db"))
    worker = _with(trace, "EXPAND", "BACKTRACK", "EXPAND", "ADD_TO_SCRATCHPAD")
    steps = worker["steps"]
    first = _step(worker, "EXPAND")
    back = _step(worker, "BACKTRACK", first)
    second = _step(worker, "EXPAND", back)
    parent = steps[first]["view"]
    # EXPAND opens the chosen cell as a finer grid; BACKTRACK returns to the grid it came from.
    assert steps[first + 1]["view"] == f"{parent}/{steps[first]['cells'][0]}"
    assert steps[back + 1]["view"] == parent
    assert steps[second + 1]["view"] == f"{parent}/{steps[second]['cells'][0]}" != steps[first + 1]["view"]
    assert any(130.30 - 0.08 <= e["time"] < 130.55 for e in _evidence(trace, worker))


async def test_investigate_after_an_anchor_at_the_edge_of_the_view(
    action_video: Path, standin: RunningServer, tmp_path: Path
) -> None:
    _, trace = await _run(action_video, standin, "after", sqlite_url(tmp_path / "runs.db"))
    worker = _with(trace, "INVESTIGATE", "ADD_TO_SCRATCHPAD")
    steps = worker["steps"]
    at = _step(worker, "INVESTIGATE")
    # INVESTIGATE's effect: a grid over the anchor cell and what follows it (a time range, not a cell path).
    start, end = (float(x) for x in steps[at + 1]["view"].split("-"))
    assert 217.0 <= start <= 219.9 < 222.0 <= end
    assert any(220.4 - 0.4 <= e["time"] < 222.0 for e in _evidence(trace, worker))


async def test_bfs_marks_promising_cells_for_the_next_round(
    action_video: Path, standin: RunningServer, tmp_path: Path
) -> None:
    # Root cells paced by the probe (coverage-first off): the mode in which BFS workers mark cells of root cells.
    db = sqlite_url(tmp_path / "runs.db")
    _, trace = await _run(action_video, standin, "expand", db, traversal="bfs", bfs_resolution_s=0)
    marker = _with(trace, "MARK_PROMISING")
    step = marker["steps"][_step(marker, "MARK_PROMISING")]
    marked = {f"{marker['target']}/{c}" for c in step["cells"]}
    assert marked and marker["stop"] == "finished"
    (marked_in,) = [r["round"] for r in trace["detail"]["rounds"] if marker in r["workers"]]
    # MARK_PROMISING's effect: a later round sends workers to the marked cells.
    later = [
        w for r in trace["detail"]["rounds"] if r["round"] > marked_in for w in r["workers"] if w["target"] in marked
    ]
    assert later, (marked, [w["target"] for w in _workers(trace)])
