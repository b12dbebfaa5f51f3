"""Video-RLM with a model that errs: dead zones in workers' views, budget stops, zoomed evidence, bad replies.

Graph tests with a scripted chat model (what a real VLM might send: explored cells, repeated ids,
replies that cannot be read at all), over the frame-numbered counter video (80 s, K = 8).
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from agent_helpers import ScriptedChat, actions_of, default_reply, prompt_text, run_graph, sent_images, step
from db_helpers import sqlite_url
from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.frames import FrameSource
from videoatlas.environment.geometry import Interval, cell_interval
from videoatlas.environment.subtitles import SubtitleLine, Subtitles
from videoatlas.inspect import load_trace, trace_lines
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import run_question
from videoatlas.runtime.context import RunConfig

pytestmark = pytest.mark.unit
DURATION = 80.0
DEEP = {"cell_px": 64, "workers": 1, "max_depth": 2, "min_expand_span_s": 0.001, "traversal": "dfs"}


def span(*path: int) -> tuple[float, float]:
    iv = cell_interval(DURATION, path, 8)
    return (iv.start, iv.end)


def variant(schema: dict[str, Any], action: str) -> dict[str, Any]:
    """The properties of one action's variant in a WorkerStep schema."""
    defs = schema.get("$defs", {})
    for option in schema["properties"]["step"].get("anyOf", [schema["properties"]["step"]]):
        body = defs[option["$ref"].split("/")[-1]] if "$ref" in option else option
        if body["properties"]["action"]["const"] == action:
            return dict(body["properties"])
    raise AssertionError(f"no {action} in {actions_of(schema)}")


def ids_offered(schema: dict[str, Any], action: str) -> list[int]:
    props = variant(schema, action)
    if "cell" in props:
        return list(props["cell"]["enum"])
    item = props["items"]["items"]
    item = schema["$defs"][item["$ref"].split("/")[-1]] if "$ref" in item else item
    return list(item["properties"]["cell"]["enum"])


def black_share(jpeg: bytes, box: tuple[int, int, int, int]) -> float:
    pixels = np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"))[box[1] : box[3], box[0] : box[2]]
    return float((pixels.max(axis=2) < 16).mean())


async def test_workers_see_dead_zones_blacked_out_and_cannot_pick_them(counter_video: Path, tmp_path: Path) -> None:
    """Round 1 explores cell 0/3 and records cell 10 of cell 0; round 2 sends a worker back to cell 0."""
    worker_calls: list[str] = []

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "WorkerStep":
            worker_calls.append(text)
            n = len(worker_calls)
            if n == 1:
                return step("EXPAND", [3])
            if n == 2:
                return step("BACKTRACK")  # 0/3 was searched and held nothing: a dead zone
            if n == 3:
                return step("ADD_TO_SCRATCHPAD", [10], [{"cell": 10, "description": "a number", "confidence": 0.8}])
            return step("FINISHED")
        if name == "UncertaintyAnalysis":
            return {**default_reply(name, text, schema), "sufficient": False, "explore_cells": [0]}
        return default_reply(name, text, schema)

    cfg = RunConfig.model_validate({**DEEP, "rounds": 2})
    out, chat, _ = await run_graph(counter_video, tmp_path, script, cfg)
    assert out["dead_zones"] == [span(0, 3)]
    (again,) = [r for r in out["reports"] if r.round == 2]
    assert again.target.path == "0" and again.target.source == "hint-cell"
    assert len(worker_calls) == 5
    call = [i for i, (name, _) in enumerate(chat.seen) if name == "WorkerStep"][4]  # round 2's look at cell 0
    _, text = chat.seen[call]
    schema = chat.formats[call]["json_schema"]["schema"]
    assert "\n3: " in text and text.split("\n3: ")[1].split("\n")[0].endswith("[explored]")
    assert text.split("\n10: ")[1].split("\n")[0].endswith("[already collected]")
    assert 3 not in ids_offered(schema, "EXPAND") and 4 in ids_offered(schema, "EXPAND")
    assert 3 not in ids_offered(schema, "ADD_TO_SCRATCHPAD") and 10 not in ids_offered(schema, "ADD_TO_SCRATCHPAD")
    # The image sent is the grid with the dead zone blacked out, pixel for pixel.
    (sent,) = chat.images[call]
    source = FrameSource(counter_video)
    try:
        atlas = VideoAtlas(source, k=8, cell_px=64)
        masked = atlas.grid((0,), [Interval(*span(0, 3))]).image.jpeg
        plain = atlas.grid((0,)).image.jpeg
    finally:
        source.close()
    assert sent == masked != plain
    cell3 = (3 * 64 + 2, 14, 4 * 64 - 2, 62)
    assert black_share(sent, cell3) > 0.6 > black_share(plain, cell3)


async def test_a_budget_stop_hands_the_unexplored_view_back_to_the_next_round(
    counter_video: Path, tmp_path: Path
) -> None:
    calls = iter([step("EXPAND", [3]), step("FINISHED")])

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        return next(calls) if name == "WorkerStep" else default_reply(name, text, schema)

    # One step: the worker opens 0/3 and is stopped before it looked at it.
    cfg = RunConfig.model_validate({**DEEP, "rounds": 2, "dfs_steps": 1})
    out, _, _ = await run_graph(counter_video, tmp_path, script, cfg)
    first, second = out["reports"]
    assert first.stop == "budget" and first.target.path == "0"
    # Nothing of cell 0 was declared dead by the budget stop: the view it was drilling (0/3) went back
    # on the frontier, and round 2 took it from there.
    assert second.target.path == "0/3" and second.target.source == "frontier"
    assert second.stop == "finished" and out["dead_zones"] == [span(0, 3)]
    assert out["searched"] == [span(0, 3)] and out["frontier"] == []


async def test_zoom_then_add_keeps_the_close_up_and_the_decision_sees_it(counter_video: Path, tmp_path: Path) -> None:
    calls = iter([step("ZOOM", [5]), step("ADD_TO_SCRATCHPAD", [5]), step("FINISHED")])

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        return next(calls) if name == "WorkerStep" else default_reply(name, text, schema)

    cfg = RunConfig.model_validate({**DEEP, "rounds": 1})
    out, chat, ctx = await run_graph(counter_video, tmp_path, script, cfg)
    (item,) = out["evidence"]
    assert item.frame.px == ctx.atlas.zoom_box == 320 > cfg.cell_px  # the counter video is 320x240
    decide = next(i for i, (name, _) in enumerate(chat.seen) if name == "FinalDecision")
    sizes = [Image.open(io.BytesIO(jpeg)).size for jpeg in chat.images[decide]]
    assert sizes[-1] == (320, 240)  # root grid, scratchpad page, then the close-up at full size
    assert len(sizes) == 3


async def test_a_probe_reply_with_bad_ids_keeps_the_good_ones(counter_video: Path, tmp_path: Path) -> None:
    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "GlobalProbe":
            return {"cells": [5, 5, 99, 7], "reason": "r"}  # a repeat and a cell the grid does not have
        return default_reply(name, text, schema)

    out, _, _ = await run_graph(counter_video, tmp_path, script, RunConfig.of(cell_px=64, workers=4, rounds=1))
    assert [r.target.path for r in out["reports"]] == ["5", "7", "0", "1"]  # the rest by virtual loss
    (repair,) = out["repairs"]
    assert repair.kind == "dropped" and "5 (repeated)" in repair.detail and "99" in repair.detail
    assert out["cost"].fallbacks == 0


async def test_unusable_master_replies_fall_back_and_the_run_finishes(counter_video: Path, tmp_path: Path) -> None:
    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name in ("SearchTask", "TraversalChoice", "GlobalProbe", "UncertaintyAnalysis"):
            return "I am not sure what you want"  # twice: the reply and the re-ask
        if name == "WorkerStep":
            return step("ADD_TO_SCRATCHPAD", [2]) if "(nothing yet)" in text else step("FINISHED")
        return default_reply(name, text, schema)

    db = sqlite_url(tmp_path / "runs.db")
    chat = ScriptedChat(script=script)
    result = await run_question(
        counter_video,
        "What number is shown?",
        ["one", "two"],
        RunConfig.of(cell_px=64, workers=2, rounds=1),
        EndpointSettings(model="scripted"),
        chat_model=chat,
        db_url=db,
        run_id="fallbacks",
    )
    assert (
        result.answer == "one"
        and result.extras["search_task"] == "What number is shown?"
        and result.extras["traversal"] == "dfs"
    )
    fallbacks = {r.node: r.detail for r in result.state["repairs"] if r.kind == "fallback"}
    assert set(fallbacks) == {"extract_search_task", "choose_traversal", "global_probe", "analyze_uncertainty"}
    assert result.cost.fallbacks == 4 and result.cost.failed_calls == 4
    assert [r.target.path for r in result.state["reports"]] == ["0", "1"]  # cells by virtual loss, in time order
    assert result.state["checks"][0]["sufficient"] is False
    shown = "\n".join(trace_lines(await load_trace("fallbacks", db)))
    assert "4 fallback(s)" in shown and "fallback (global_probe)" in shown and "virtual loss" in shown


async def test_seven_parallel_workers_overshoot_a_token_budget_by_at_most_one_call(
    counter_video: Path, tmp_path: Path
) -> None:
    def usage(messages: Any, reply: str) -> tuple[int, int]:
        """Tokens as a Qwen-style server would count them: 28 px patches, about four characters a token."""
        visual = 0
        for jpeg in sent_images(messages):
            w, h = Image.open(io.BytesIO(jpeg)).size
            visual += math.ceil(w / 28) * math.ceil(h / 28)
        return visual + len(prompt_text(messages)) // 4, len(reply) // 4

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "WorkerStep":  # keep looking: only the budget stops these workers
            return step("ZOOM", [1]) if "ZOOM" in actions_of(schema) else step("INVESTIGATE", [1], direction="after")
        return default_reply(name, text, schema)

    budget = 30_000
    cfg = RunConfig.of(cell_px=64, workers=7, rounds=1, dfs_steps=50, token_budget=budget, traversal="dfs")
    out, chat, _ = await run_graph(counter_video, tmp_path, script, cfg, usage=usage)
    ctx_calls = [name for name, _ in chat.seen]
    assert ctx_calls.count("WorkerStep") > 7  # several steps each, in parallel
    assert [r.stop for r in out["reports"]] == ["global-budget"] * 7
    largest = max(usage_of(chat, i) for i in range(len(chat.seen)))
    decision = usage_of(chat, ctx_calls.index("FinalDecision"))
    explored = out["cost"].tokens - decision
    # The search used the budget (less than one call per worker slot was left unused) and never
    # went past it; the decision, which always runs, is the one call over.
    assert budget - 7 * largest < explored <= budget
    assert out["cost"].tokens <= budget + largest


def usage_of(chat: ScriptedChat, call: int) -> int:
    """Tokens one recorded call was charged (as the scripted usage function counted them)."""
    return int(chat.token_counts[call])


async def test_probe_and_workers_get_subtitles_cell_by_cell(counter_video: Path, tmp_path: Path) -> None:
    said = Subtitles([SubtitleLine(2.6, 3.4, "the ferry leaves"), SubtitleLine(70.1, 71.0, "last call")])
    cfg = RunConfig.of(cell_px=64, workers=1, rounds=1)
    _, chat, _ = await run_graph(counter_video, tmp_path, default_reply, cfg, subtitles=said)
    probe = next(text for name, text in chat.seen if name == "GlobalProbe")
    assert "cell 2: the ferry leaves" in probe and "cell 56: last call" in probe  # root cells last 1.25 s
    worker = next(text for name, text in chat.seen if name == "WorkerStep")  # cell 0 (0-1.25 s): silent
    assert "What is said, by cell (subtitles or transcribed speech):\n(none)" in worker
