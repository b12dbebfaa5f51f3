"""Graph wiring with a scripted fake chat model, on a real generated video (no server)."""

from __future__ import annotations

import asyncio
import copy
import gc
import io
import pickle
import warnings
from pathlib import Path
from typing import Any, cast

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from PIL import Image

from agent_helpers import ScriptedChat, actions_of, decided, default_reply, make_context, run_graph, step, view_start
from videoatlas.agents.video_rlm.nodes.worker_act import InvalidAction, apply_action
from videoatlas.agents.video_rlm.nodes.worker_observe import initial_view
from videoatlas.agents.video_rlm.state.models import Target, View
from videoatlas.agents.video_rlm.state.worker import WorkerState
from videoatlas.environment.geometry import cell_interval
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import run_question
from videoatlas.runtime.context import RunConfig
from videoatlas.state.models import Cost

pytestmark = pytest.mark.e2e
DURATION = 80.0  # the counter video


def cell_range(*path: int) -> tuple[float, float]:
    iv = cell_interval(DURATION, path)
    return iv.start, iv.end


async def test_fan_out_to_n_workers(counter_video: Path, tmp_path: Path) -> None:
    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "GlobalProbe":
            return {"cells": [5, 9, 20], "reason": "r"}
        return default_reply(name, text, schema)

    out, chat, _ = await run_graph(counter_video, tmp_path, script, RunConfig.of(cell_px=64, workers=3, rounds=1))
    reports = out["reports"]
    assert sorted(r.target.path for r in reports) == ["20", "5", "9"]
    assert [name for name, _ in chat.seen].count("WorkerStep") == 3
    # Each worker finished without evidence: its cell became a dead zone.
    assert out["dead_zones"] == sorted([cell_range(5), cell_range(9), cell_range(20)])
    assert out["cost"].calls == 1 + 1 + 1 + 3 + 1  # task, traversal, probe, 3 workers, decision
    assert out["stop_reason"] == "1 rounds done" and out["answer"] == "one"


def adding_script(name: str, text: str, schema: dict[str, Any]) -> Any:
    """Workers add cell 7 at their first step, then finish."""
    if name == "WorkerStep":
        if "Evidence already collected in this region:\n(nothing yet)" in text:
            return step("ADD_TO_SCRATCHPAD", [7], [{"cell": 7, "description": "a number", "confidence": 0.8}])
        return step("FINISHED")
    if name == "GlobalProbe":
        n = schema["properties"]["cells"]["minItems"]
        return {"cells": [2, 30, 61, 12, 40][:n], "reason": "r"}
    return default_reply(name, text, schema)


async def test_merge_is_independent_of_finishing_order(counter_video: Path, tmp_path: Path) -> None:
    cfg = RunConfig.of(cell_px=64, workers=3, rounds=1)

    def slow_first(name: str, text: str) -> float:
        return 0.3 if name == "WorkerStep" and view_start(text).startswith("00:02") else 0.0

    def slow_last(name: str, text: str) -> float:
        return 0.3 if name == "WorkerStep" and view_start(text).startswith("01:16") else 0.0

    a, _, _ = await run_graph(counter_video, tmp_path / "a", adding_script, cfg, delay=slow_first)
    b, _, _ = await run_graph(counter_video, tmp_path / "b", adding_script, cfg, delay=slow_last)
    assert [(e.id, e.time) for e in a["evidence"]] == [(e.id, e.time) for e in b["evidence"]]
    assert len(a["evidence"]) == 3
    assert a["dead_zones"] == b["dead_zones"]
    assert [(r.worker, r.target.path) for r in a["reports"]] == [(r.worker, r.target.path) for r in b["reports"]]


def worker_state(view: View, traversal: str = "dfs", **extra: Any) -> dict[str, Any]:
    from videoatlas.environment.geometry import grid_for_path, parse_path

    grid = grid_for_path(DURATION, parse_path(view.path or "")) if view.path is not None else None
    cells = [
        {
            "index": c.index,
            "start": c.interval.start,
            "end": c.interval.end,
            "time": c.interval.mid,
            "available": True,
            "explored": False,
            "collected": False,
        }
        for c in (grid.cells if grid else [])
    ]
    state = {
        "worker": "r1w1",
        "round": 1,
        "question": "q",
        "choices": [],
        "search_task": "t",
        "traversal": traversal,
        "target": Target(path=view.path, start=view.start, end=view.end, source="probe"),
        "budget": 6,
        "spent": Cost(),
        "explored": [],
        "scratchpad": [],
        "view": view,
        "stack": [],
        "steps": [],
        "summary": "",
        "zoom_time": None,
        "allowed": ["EXPAND", "BACKTRACK", "ZOOM", "INVESTIGATE", "ADD_TO_SCRATCHPAD", "MARK_PROMISING", "FINISHED"],
        "cells": cells,
        "image_sha": "",
        "decision": None,
        "invalid_actions": 0,
        "stop": "",
        "viewed": [],
        "examined": [],
        "found": 0,
        "evidence": [],
    }
    state.update(extra)
    return state


def with_(base: dict[str, Any], **changes: Any) -> WorkerState:
    return cast(WorkerState, {**base, **changes})


def test_each_action_changes_the_worker_state_as_it_should(counter_video: Path, tmp_path: Path) -> None:
    ctx, _, source = make_context(counter_video, tmp_path, default_reply, RunConfig.of(cell_px=64, max_depth=3))
    try:
        root_view = initial_view(Target(path="5", start=6.25, end=7.5, source="probe"), ctx)
        assert root_view == View(kind="grid", path="5", start=6.25, end=7.5, depth=1)
        base = worker_state(root_view)

        update, _, _ = apply_action(with_(base, decision=decided(step("EXPAND", [3]))), ctx)
        child = update["view"]
        assert child.path == "5/3" and child.depth == 2 and update["stack"] == [root_view]
        assert (child.start, child.end) == cell_range(5, 3)

        back, _, _ = apply_action(with_(base, stack=[root_view], view=child, decision=decided(step("BACKTRACK"))), ctx)
        assert back["view"] == root_view and back["stack"] == []
        assert back["left"] == [(child.start, child.end)]  # the grid left behind is blacked out from now on

        zoom, _, _ = apply_action(with_(base, decision=decided(step("ZOOM", [10]))), ctx)
        assert zoom["zoom_time"] == base["cells"][10]["time"]

        inv, _, _ = apply_action(with_(base, decision=decided(step("INVESTIGATE", [63], direction="after"))), ctx)
        anchor = base["cells"][63]
        assert inv["view"].kind == "investigate" and inv["view"].start == pytest.approx(anchor["start"])

        item = {"cell": 12, "description": "seven", "confidence": 0.7}
        added, _, _ = apply_action(with_(base, decision=decided(step("ADD_TO_SCRATCHPAD", [12], [item]))), ctx)
        (ev,) = added["evidence"]
        assert ev.place == "cell 5/12" and ev.where == {"round": 1, "worker": "r1w1", "depth": 2, "cell": "5/12"}
        assert ev.time == base["cells"][12]["time"] and ev.description == "seven"
        assert (ev.start, ev.end) == cell_range(5, 12) and ev.frame.video == ctx.atlas.source.identity
        assert added["found"] == 1
        # Adding what this worker already collected changes nothing: the step is invalid (and so counted).
        again = with_(base, evidence=added["evidence"], decision=decided(step("ADD_TO_SCRATCHPAD", [12], [item])))
        with pytest.raises(InvalidAction, match="nothing new"):
            apply_action(again, ctx)

        marked, _, _ = apply_action(with_(base, traversal="bfs", decision=decided(step("MARK_PROMISING", [4, 8]))), ctx)
        assert [m.path for m in marked["frontier"]] == ["5/4", "5/8"] and marked["stop"] == "finished"

        done, _, _ = apply_action(with_(base, decision=decided(step("FINISHED"))), ctx)
        assert done["stop"] == "finished"

        for bad in (decided(step("EXPAND", [])), decided(step("INVESTIGATE", [3])), decided(step("BACKTRACK"))):
            with pytest.raises(InvalidAction):
                apply_action(with_(base, decision=bad), ctx)
        with pytest.raises(InvalidAction, match="not available"):
            apply_action(with_(base, allowed=["FINISHED"], decision=decided(step("EXPAND", [1]))), ctx)
    finally:
        source.close()


async def test_worker_step_budget_stops_the_worker(counter_video: Path, tmp_path: Path) -> None:
    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "WorkerStep":
            n = 20 * text.count("\n- @")  # cells 0, 20, 40: different frames (evidence lines so far x 20)
            return step("ADD_TO_SCRATCHPAD", [n], [{"cell": n, "description": "x", "confidence": 0.5}])
        return default_reply(name, text, schema)

    out, _, _ = await run_graph(
        counter_video, tmp_path, script, RunConfig.of(cell_px=64, workers=1, rounds=1, dfs_steps=3)
    )
    (report,) = out["reports"]
    assert report.stop == "budget" and len(report.steps) == 3 and len(out["evidence"]) == 3


async def test_round_budget_and_sufficiency(counter_video: Path, tmp_path: Path) -> None:
    def never_enough(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "UncertaintyAnalysis":
            return {**default_reply(name, text, schema), "sufficient": False}
        return adding_script(name, text, schema)

    out, chat, _ = await run_graph(counter_video, tmp_path, never_enough, RunConfig.of(cell_px=64, workers=2, rounds=2))
    assert out["round"] == 2 and out["stop_reason"] == "2 rounds done"
    assert [n for n, _ in chat.seen].count("UncertaintyAnalysis") == 2
    # Round 2 avoided the cells round 1 already took (virtual loss / dead zones).
    r1 = {r.target.path for r in out["reports"] if r.round == 1}
    r2 = {r.target.path for r in out["reports"] if r.round == 2}
    assert r1 and r2 and not r1 & r2

    enough, chat, _ = await run_graph(counter_video, tmp_path / "e", adding_script, RunConfig.of(cell_px=64, rounds=5))
    assert enough["round"] == 1 and enough["stop_reason"] == "evidence sufficient"


@pytest.mark.parametrize(
    ("budget", "reason"), [({"call_budget": 4}, "call budget of 4"), ({"token_budget": 3000}, "token budget of 3000")]
)
async def test_global_budgets_stop_exploration(
    counter_video: Path, tmp_path: Path, budget: dict[str, int], reason: str
) -> None:
    def never_enough(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "UncertaintyAnalysis":
            return {**default_reply(name, text, schema), "sufficient": False}
        return adding_script(name, text, schema)

    cfg = RunConfig.model_validate({"cell_px": 64, "workers": 2, "rounds": 10, **budget})
    out, _, _ = await run_graph(counter_video, tmp_path, never_enough, cfg)
    assert reason in out["stop_reason"] and out["round"] < 10
    assert out["answer"] in ("one", "two")  # the decision still runs on what was collected


async def test_invalid_action_is_counted_and_the_worker_goes_on(counter_video: Path, tmp_path: Path) -> None:
    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "WorkerStep":
            if "could not be done" in text:
                return step("FINISHED")
            return step("ZOOM", [99])  # a cell this grid does not have: allowed action, impossible to carry out
        return default_reply(name, text, schema)

    out, _, _ = await run_graph(counter_video, tmp_path, script, RunConfig.of(cell_px=64, workers=1, rounds=1))
    (report,) = out["reports"]
    assert report.invalid_actions == 1
    assert [s.valid for s in report.steps] == [False, True] and report.stop == "finished"


async def test_unavailable_action_is_refused_by_the_schema_and_reasked(counter_video: Path, tmp_path: Path) -> None:
    answers = iter([step("BACKTRACK"), step("FINISHED")])  # no BACKTRACK at the worker's root

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "WorkerStep":
            assert "BACKTRACK" not in actions_of(schema)
            return next(answers)
        return default_reply(name, text, schema)

    out, _, ctx = await run_graph(counter_video, tmp_path, script, RunConfig.of(cell_px=64, workers=1, rounds=1))
    (report,) = out["reports"]
    assert [s.action for s in report.steps] == ["FINISHED"]
    assert ctx.vlm.totals.outcomes["reasked"] == 1


async def test_bfs_marks_feed_the_next_round(counter_video: Path, tmp_path: Path) -> None:
    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "TraversalChoice":
            return {"traversal": "bfs", "reason": "counting"}
        if name == "WorkerStep":
            enum = actions_of(schema)
            if "depth 1" in text:  # BFS workers scan; below the maximum depth they may mark cells
                assert enum == ["ADD_TO_SCRATCHPAD", "MARK_PROMISING", "FINISHED"]
                return step("MARK_PROMISING", [6])
            assert enum == ["ADD_TO_SCRATCHPAD", "FINISHED"]  # depth 2 is the maximum here
            return step("ADD_TO_SCRATCHPAD", [1], [{"cell": 1, "description": "n", "confidence": 0.9}])
        if name == "UncertaintyAnalysis":
            return {**default_reply(name, text, schema), "sufficient": "[B]" in text}
        return default_reply(name, text, schema)

    cfg = RunConfig.of(
        cell_px=64, workers=2, bfs_cells=1, rounds=3, max_depth=2, min_expand_span_s=0.001, bfs_resolution_s=0
    )
    out, _, _ = await run_graph(counter_video, tmp_path, script, cfg)
    r2 = [r.target for r in out["reports"] if r.round == 2]
    assert [t.path for t in r2] == ["0/6", "1/6"] and all(t.source == "frontier" for t in r2)
    assert all(len(r.steps) == 1 for r in out["reports"])  # BFS: one step per worker


async def test_a_bfs_round_gives_each_worker_slot_several_one_step_cells(counter_video: Path, tmp_path: Path) -> None:
    """BFS: workers x bfs_cells one-step workers per round, never more than ``workers`` at once."""
    calls = {"started": 0, "ended": 0, "most": 0}

    def delay(name: str, text: str) -> float:
        if name != "WorkerStep":
            return 0.0
        calls["started"] += 1
        calls["most"] = max(calls["most"], calls["started"] - calls["ended"])
        return 1.0 if calls["started"] == 1 else 0.05  # the other slot surely starts meanwhile

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "WorkerStep":
            calls["ended"] += 1
        return default_reply(name, text, schema)

    cfg = RunConfig.of(
        cell_px=64, workers=2, bfs_cells=3, rounds=1, traversal="bfs", max_concurrency=8, bfs_resolution_s=0
    )
    out, chat, _ = await run_graph(counter_video, tmp_path, script, cfg, delay=delay)
    probe = next(text for name, text in chat.seen if name == "GlobalProbe")
    assert "Choose exactly 6 different cells" in probe
    assert sorted(int(r.target.path) for r in out["reports"]) == [0, 1, 2, 3, 4, 5]
    assert all(len(r.steps) == 1 for r in out["reports"])
    assert calls["started"] == 6 and calls["most"] == 2  # two slots, both used
    assert out["dead_zones"] == [cell_range(0)[:1] + cell_range(5)[1:]]
    # DFS keeps one cell per worker.
    as_dfs = cfg.with_settings(traversal="dfs")
    dfs, _, _ = await run_graph(counter_video, tmp_path / "dfs", default_reply, as_dfs)
    assert len(dfs["reports"]) == 2


async def test_the_frame_ledger_counts_frames_sent_and_distinct_moments(counter_video: Path, tmp_path: Path) -> None:
    out, chat, _ = await run_graph(
        counter_video, tmp_path, adding_script, RunConfig.of(cell_px=64, workers=1, rounds=1)
    )
    # Every grid image (512 px: 8 x 8 cells of 64 px) shows 64 frames, a one-tile scratchpad page one:
    # sent counts every showing, viewed each moment once.
    sizes = [Image.open(io.BytesIO(jpeg)).width for images in chat.images for jpeg in images]
    assert sorted(set(sizes)) == [64, 512]
    assert out["cost"].frames_sent == sum(64 if w == 512 else 1 for w in sizes)
    # Distinct moments: the root grid's 64, and the worker's cell of 1.25 s at 25 fps holds at most 32
    # frames however many cells show it (the scratchpad's frame is one of them).
    assert 64 < out["cost"].frames_viewed <= 64 + 32 < out["cost"].frames_sent


async def test_paced_bfs_searches_every_root_cell_by_the_last_round(counter_video: Path, tmp_path: Path) -> None:
    """``bfs_cells="auto"``: the root cells not yet searched are spread over the rounds left (coverage-first off)."""
    cfg = RunConfig.of(cell_px=64, workers=2, rounds=3, traversal="bfs", bfs_resolution_s=0)
    assert "bfs_cells" not in cfg.settings  # the default
    out, chat, _ = await run_graph(counter_video, tmp_path, default_reply, cfg)
    per_round = [sorted(int(r.target.path) for r in out["reports"] if r.round == n) for n in (1, 2, 3)]
    # 64 cells over 3 rounds of 2 workers: ceil(64 / 6) = 11 each (22), then ceil(42 / 4) = 11 (22), then 20.
    assert [len(cells) for cells in per_round] == [22, 22, 20]
    assert sorted(c for cells in per_round for c in cells) == list(range(64))
    probes = [text for name, text in chat.seen if name == "GlobalProbe"]
    assert "Choose exactly 22 different cells" in probes[0] and "Choose exactly 20 different cells" in probes[2]
    assert out["searched"] == [(0.0, pytest.approx(80.0))]
    # A fixed width keeps the paper's one cell per BFS worker: 2 cells a round.
    fixed, _, _ = await run_graph(counter_video, tmp_path / "fixed", default_reply, cfg.with_settings(bfs_cells=1))
    assert len(fixed["reports"]) == 6


async def test_traversal_override_skips_the_call(counter_video: Path, tmp_path: Path) -> None:
    out, chat, _ = await run_graph(
        counter_video, tmp_path, default_reply, RunConfig.of(cell_px=64, traversal="bfs", rounds=1)
    )
    assert out["traversal"] == "bfs" and "TraversalChoice" not in [n for n, _ in chat.seen]


async def test_open_ended_question_gets_free_text(counter_video: Path, tmp_path: Path) -> None:
    out, chat, _ = await run_graph(
        counter_video, tmp_path, adding_script, RunConfig.of(cell_px=64, rounds=1), choices=[]
    )
    assert out["answer"] == "it is a counter" and out["answer_index"] is None
    decide_text = next(t for n, t in chat.seen if n == "FinalDecision")
    assert "[A] @" in decide_text  # evidence descriptions are in the prompt, labelled


class AssertImmutableSaver(InMemorySaver):
    """Fails when a node changes a saved state object in place (it must return new values instead)."""

    def __init__(self) -> None:
        super().__init__()
        self.snapshots: list[tuple[Any, bytes]] = []

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        for obj, frozen in self.snapshots:
            assert pickle.dumps(obj) == frozen, "a node mutated state in place"
        values = checkpoint["channel_values"]
        self.snapshots.append((values, pickle.dumps(values)))
        return super().put(config, copy.deepcopy(checkpoint), metadata, new_versions)

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return self.put(config, checkpoint, metadata, new_versions)


async def test_nodes_never_mutate_state_in_place(counter_video: Path, tmp_path: Path) -> None:
    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "UncertaintyAnalysis":
            return {**default_reply(name, text, schema), "sufficient": False, "erase": ["A"]}
        if name == "WorkerStep" and "EXPAND" in actions_of(schema) and "depth 1" in text:
            return step("EXPAND", [4])
        return adding_script(name, text, schema)

    saver = AssertImmutableSaver()
    cfg = RunConfig.of(cell_px=64, workers=2, rounds=2, max_depth=2, min_expand_span_s=0.001)
    out, _, _ = await run_graph(counter_video, tmp_path, script, cfg, checkpointer=saver)
    assert len(saver.snapshots) > 10 and out["round"] == 2


async def test_bfs_is_analysed_every_round_as_coverage_grows(counter_video: Path, tmp_path: Path) -> None:
    """A BFS question can become answerable by coverage alone, so rounds without new evidence are
    analysed too; coverage counts searched cells with findings, dead zones only those without."""
    progress: list[str] = []

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "TraversalChoice":
            return {"traversal": "bfs", "reason": "counting"}
        if name == "WorkerStep":
            if view_start(text) == "00:00.0":  # only cell 0 shows the counted thing
                return step("ADD_TO_SCRATCHPAD", [3], [{"cell": 3, "description": "one", "confidence": 0.9}])
            return step("FINISHED")
        if name == "UncertaintyAnalysis":
            progress.append(text.split("Progress: ", 1)[1].split("\n", 1)[0])
            return {**default_reply(name, text, schema), "sufficient": False}
        return default_reply(name, text, schema)

    cfg = RunConfig.of(cell_px=64, workers=2, bfs_cells=1, rounds=3, bfs_resolution_s=0)  # root-cell pacing
    out, chat, _ = await run_graph(counter_video, tmp_path, script, cfg)
    assert [n for n, _ in chat.seen].count("UncertaintyAnalysis") == 3
    covered = [int(p.split("%", 1)[0]) for p in progress]
    assert covered == sorted(covered) and covered[0] < covered[-1], progress
    assert "explored without findings" in progress[0]
    decision = next(text for name, text in chat.seen if name == "FinalDecision")
    assert f"Search coverage: {covered[-1]}% of the video covered by workers" in decision
    searched = [r.target.path for r in out["reports"]]
    assert len(searched) == 6 and "0" in searched
    assert out["searched"] == [cell_range(0)[:1] + cell_range(5)[1:]]  # cells 0-5, as one interval
    assert out["dead_zones"] == [cell_range(1)[:1] + cell_range(5)[1:]]  # cell 0 held evidence


async def test_cells_that_open_as_the_same_view_get_one_worker(counter_video: Path, tmp_path: Path) -> None:
    # At max depth 0 every root cell opens as the root grid itself: three workers would send the
    # same prompt three times.
    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "GlobalProbe":
            return {"cells": [5, 9, 20], "reason": "r"}
        return default_reply(name, text, schema)

    cfg = RunConfig.of(cell_px=64, workers=3, rounds=2, max_depth=0)
    out, chat, _ = await run_graph(counter_video, tmp_path, script, cfg)
    assert [r.target.path for r in out["reports"]] == ["5"]
    assert [name for name, _ in chat.seen].count("WorkerStep") == 1
    # The one worker saw the whole video and found nothing, so nothing is left for round 2.
    assert out["dead_zones"] == [(0.0, DURATION)]
    assert out["stop_reason"] == "every region is explored"
    # At depth 1 the same three cells are three different views.
    deeper, chat, _ = await run_graph(counter_video, tmp_path / "d1", script, cfg.with_settings(max_depth=1))
    assert sorted(r.target.path for r in deeper["reports"] if r.round == 1) == ["20", "5", "9"]


async def test_a_run_stopped_with_worker_tasks_queued_leaves_no_coroutine_never_awaited(
    counter_video: Path, tmp_path: Path
) -> None:
    """Ctrl-C with more workers than slots: the queued ones end cleanly, without a RuntimeWarning on stderr."""
    started = asyncio.Event()
    steps: list[str] = []

    def delay(name: str, text: str) -> float:
        if name != "WorkerStep":
            return 0.0
        steps.append(text)
        if len(steps) == 2:  # both slots taken, four workers waiting for one
            started.set()
        return 60.0

    cfg = RunConfig.of(cell_px=64, workers=2, bfs_cells=3, rounds=1, traversal="bfs", bfs_resolution_s=0)  # 6 workers
    chat = ScriptedChat(script=default_reply, delay=delay)
    run = asyncio.ensure_future(
        run_question(
            counter_video, "How many?", ["one", "two"], cfg, EndpointSettings(model="s"), chat_model=chat, persist=False
        )
    )
    await asyncio.wait_for(started.wait(), 120)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []
    assert len(steps) == 2
