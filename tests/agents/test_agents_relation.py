"""Time relations in VideoSeek, EEA and VideoARM, each in its own style, over the shared relation module.

Graph tests with a scripted model that names the relation "right after" and an anchor, on the
generated counter video, check from what was sent: the anchor is searched first (the tools are asked
which frame shows it), the looks that follow go to the window after the anchor's time, and the final
decision is told the anchor's time and its reasoning checks the answer's time against it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agent_helpers import default_reply, make_context
from videoatlas.agents.eea.agent import AGENT as EEA
from videoatlas.agents.eea.search import expansion_frames
from videoatlas.agents.relation import (
    Anchor,
    Relation,
    RelationStep,
    anchor_label,
    relation_of,
    relation_text,
    window,
)
from videoatlas.environment.geometry import Interval
from videoatlas.environment.timefmt import format_ts
from videoatlas.runtime.config import RunConfig
from videoatlas.runtime.frame_index import FrameIndex
from videoatlas.state.models import Evidence, FrameRef, IndexInfo, Repair

DURATION = 80.0  # the counter video
QUESTION = "Which number is shown right after the 3?"


def ev(id_: str, time: float) -> Evidence:
    return Evidence(
        id=id_, time=time, start=time, end=time, description="x", confidence=0.9,
        frame=FrameRef(video="v", time=time, px=64), where={"round": 1, "worker": "w"},
    )  # fmt: skip


def variants(schema: dict[str, Any], field: str = "call") -> dict[str, dict[str, Any]]:
    """The variants of a discriminated union field, by their tool name, with their properties."""
    union = schema["properties"][field]
    found = {}
    for v in union.get("anyOf") or union.get("oneOf") or [union]:
        body = schema["$defs"][v["$ref"].split("/")[-1]] if "$ref" in v else v
        found[body["properties"]["tool"]["const"]] = body["properties"]
    return found


async def run(agent: str, video: Path, tmp: Path, script: Any, **settings: Any) -> tuple[dict[str, Any], Any]:
    from videoatlas.agents.registry import get_agent

    ctx, chat, source = make_context(video, tmp, script, RunConfig.of(agent=agent, cell_px=64, **settings))
    try:
        out = (
            await get_agent(agent)
            .build(None)
            .ainvoke({"question": QUESTION, "choices": ["4", "7"]}, {"recursion_limit": 200}, context=ctx)
        )
    finally:
        source.close()
    return out, chat


@pytest.mark.unit
def test_the_reply_window_label_and_text_are_shared() -> None:
    class Reply:
        relation = "just before"
        anchor = " the goal "
        other_anchor = ""

    relation = relation_of(Reply())
    assert relation == Relation(kind="just before", anchor="the goal") and relation.side == "before"
    assert not relation_of(object()).anchored  # a reply without the fields asks no relation
    seen = Anchor.at(30.0)
    assert window(relation, seen, 80.0, 8.0) == Interval(22.0, 30.0)
    assert window(Relation(kind="right after", anchor="a"), seen, 80.0, 8.0) == Interval(30.0, 38.0)
    assert window(Relation(kind="right after", anchor="a"), Anchor.at(80.0), 80.0, 8.0) is None
    # an anchor without an evidence id is found among the labelled items by its time
    assert anchor_label(seen, [("A", ev("x", 12.0)), ("B", ev("y", 30.0))]) == "B"
    assert anchor_label(Anchor(evidence="x", time=30.0, start=30.0, end=30.0), [("A", ev("x", 12.0))]) == "A"
    assert "The anchor is seen at 00:30.0 (30.0 s)" in relation_text(EEA.load_prompts("default"), relation, seen, None)


@pytest.mark.unit
async def test_videoseeks_planner_finds_the_anchor_then_looks_right_after_it(
    counter_video: Path, tmp_path: Path
) -> None:
    """Turn 1 says the relation; its skim is asked for the anchor's frame; turn 2 is held to the window after it."""
    seen: dict[str, list[Any]] = {"plan": [], "plan_schema": [], "skim": [], "skim_schema": []}

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "PlannerTurn":
            seen["plan"].append(text)
            seen["plan_schema"].append(schema)
            turn = len(seen["plan"])
            if turn == 1:
                call = {"tool": "skim", "query": "the number 3", "start": 20.0, "end": 28.0}
                return {"thought": "find the 3 first", "call": call, "relation": "right after", "anchor": "the 3"}
            if turn == 2:  # asks for the whole video: held to the window after the anchor
                return {
                    "thought": "after it",
                    "call": {"tool": "skim", "query": "the next number", "start": 0.0, "end": 80.0},
                }
            return {"thought": "settled", "call": {"tool": "answer"}}
        if name == "SkimReport":
            seen["skim"].append(text)
            seen["skim_schema"].append(schema)
            reply: dict[str, Any] = {
                "frames": [],
                "summary": "numbers",
                "relevant": [] if len(seen["skim"]) == 1 else [1],
            }
            return {**reply, "anchor": [2]} if "anchor" in schema["properties"] else reply
        if name == "FinalDecision":
            return {"judgements": [], "answer": 0, "reasoning": "the number after it", "evidence": ["A", "B"]}
        return default_reply(name, text, schema)

    out, chat = await run("videoseek", counter_video, tmp_path, script, alpha=2)
    assert out["relation"] == Relation(kind="right after", anchor="the 3")
    first, second = out["turns"]
    # (a) the anchor is searched first: the first planner turn asks the relation, its skim is asked for the anchor
    assert "relation" in seen["plan_schema"][0]["properties"] and "relation" not in seen["plan_schema"][1]["properties"]
    assert 'Also give "anchor": the id of the frame that shows the 3' in seen["skim"][0]
    assert "anchor" in seen["skim_schema"][0]["properties"] and "anchor" not in seen["skim_schema"][1]["properties"]
    anchor_t = first.frames[2]
    assert first.anchor == anchor_t and anchor_t == pytest.approx(22.5, abs=0.04)
    assert "anchor (the 3) seen at" in first.observation
    # (b) the next look goes to the window after it: 8 s (one skim, more than an overview spacing of 80/32 s)
    start, end = anchor_t, anchor_t + 8.0
    assert f"the window after it is {start:.1f} to {end:.1f} s" in seen["plan"][1]
    calls = variants(seen["plan_schema"][1])
    assert set(calls) == {"skim", "focus", "answer"}  # no overview while the window is due
    assert calls["skim"]["start"]["minimum"] == pytest.approx(start, abs=1e-3)
    assert calls["skim"]["end"]["maximum"] == pytest.approx(end, abs=1e-3)
    assert (second.start, second.end) == (pytest.approx(start), pytest.approx(end))
    assert all(start <= t <= end for t in second.frames)
    assert any("held to" in r.detail and "the window beside the anchor" in r.detail for r in out["repairs"])
    # (c) the decision is told the anchor's time, and its reasoning places the answer after it
    decide = next(t for n, t in chat.seen if n == "FinalDecision")
    assert f"The anchor is [A] at 00:{anchor_t:04.1f} ({anchor_t:.1f} s)" in decide
    answer_t = second.frames[1]
    assert [e.time for e in out["evidence"]] == [anchor_t, answer_t]
    gap = answer_t - anchor_t
    assert f"Time check against the anchor at 00:{anchor_t:04.1f} (right after): " in out["reasoning"]
    assert f"is {gap:.1f} s after it." in out["reasoning"] and "wrong side" not in out["reasoning"]


LABELLED = re.compile(r"\[([A-Z]+)\] \S+ \(([\d.]+) s\)")
"""An evidence line as EEA's answer lists it: ``[B] 00:22.5 (22.5 s)``."""


def fake_index(monkeypatch: pytest.MonkeyPatch, anchor_t: float, decoy_t: float) -> None:
    """A frame index of one frame a second where the anchor's phrase finds ``anchor_t`` and any other query
    ``decoy_t`` (the retriever's vectors stand in for an embedding endpoint; what is shown is the real video)."""
    from videoatlas.agents.eea import discover as discover_module

    times = np.arange(80) + 0.5
    vectors = np.tile(np.array([0.0, 0.0, 1.0], np.float32), (80, 1))
    vectors[int(anchor_t)] = [1.0, 0.0, 0.0]
    vectors[int(decoy_t)] = [0.0, 1.0, 0.0]

    async def index(ctx: Any, settings: Any) -> tuple[FrameIndex, IndexInfo]:
        info = IndexInfo(model="fake", fps=1.0, frames=80, build_s=0.0, embedded=0, reused=True)
        return FrameIndex(times, vectors), info

    async def queries(ctx: Any, settings: Any, texts: Sequence[str]) -> tuple[np.ndarray, int]:
        return np.array([[1.0, 0.0, 0.0] if t == "the 3" else [0.0, 1.0, 0.0] for t in texts], np.float32), 0

    monkeypatch.setattr(discover_module, "frame_index", index)
    monkeypatch.setattr(discover_module, "query_vectors", queries)


@pytest.mark.unit
async def test_eeas_queries_retrieve_the_anchor_first_then_its_window_is_expanded(
    counter_video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first query is the anchor; its hit places round 1's frames; round 2 expands the window after it."""
    anchor_t, decoy_t = 22.5, 50.5
    fake_index(monkeypatch, anchor_t, decoy_t)
    _, first_frames = expansion_frames(0.0, DURATION, [(anchor_t, 1.0)], 6, 3)
    seen: dict[str, list[Any]] = {"evaluate": [], "schemas": []}

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "SearchQueries":
            return {"search_queries": ["a number on screen"], "relation": "right after", "anchor": "the 3"}
        if name == "SegmentRewards":
            seen["evaluate"].append(text)
            seen["schemas"].append(schema)
            reply: dict[str, Any] = {
                key: {"explanation": "numbers", "score": 50}
                for key in schema["properties"]
                if key.startswith("segment_")
            }
            return (
                {**reply, "anchor": [first_frames.index(anchor_t) + 1]} if "anchor" in schema["properties"] else reply
            )
        if name == "Selection":
            return {"thought": "enough", "step": {"action": "answer"}}
        if name == "FinalDecision":
            times = {label: float(t) for label, t in LABELLED.findall(text)}
            anchor = next(label for label, t in times.items() if t == anchor_t)
            after = next(label for label, t in sorted(times.items(), key=lambda x: x[1]) if t > anchor_t)
            return {"judgements": [], "answer": 0, "reasoning": "the next number", "evidence": [anchor, after]}
        return default_reply(name, text, schema)

    out, chat = await run("eea", counter_video, tmp_path, script, top_k=1, query_update=False, expansions=3)
    assert [n for n, _ in chat.seen] == [
        "SearchQueries",
        "SegmentRewards",
        "SegmentRewards",
        "Selection",
        "FinalDecision",
    ]
    # (a) the anchor is retrieved first: its phrase is the first query, and its hit alone places round 1's frames
    assert out["relation"] == Relation(kind="right after", anchor="the 3") and out["queries"][0] == "the 3"
    first, second = out["rounds"]
    assert first.anchor_frames == [anchor_t] and first.frames == first_frames and decoy_t not in first.frames
    assert 'Also give "anchor": the id of the frame that shows the 3' in seen["evaluate"][0]
    assert "anchor" in seen["schemas"][0]["properties"] and "anchor" not in seen["schemas"][1]["properties"]
    assert out["relation_anchor"] == Anchor.at(anchor_t)
    # (b) the window after it (one child of the whole video: 80/7 s) is expanded next, without asking the policy
    end = anchor_t + DURATION / 7
    window_seg = next(s for s in out["segments"] if s.id == second.segment)
    assert (window_seg.start, window_seg.end) == (anchor_t, pytest.approx(end)) and window_seg.expanded
    assert first.choice == f"segment {window_seg.id}" and "the window after the 3" in first.thought
    # its frames each twice as far from the anchor as the one before: the nearest 80/7/64 s from it
    assert second.frames == pytest.approx([anchor_t + DURATION / 7 / 2**k for k in range(6, 0, -1)])
    assert second.anchor_frames == []
    # (c) the decision is told the anchor's time; its reasoning places the cited answer after it
    decide = next(t for n, t in chat.seen if n == "FinalDecision")
    assert re.search(r"The anchor is \[[A-Z]+\] at 00:22\.5 \(22\.5 s\)", decide)
    answer_t = min(t for t in [*first.frames, *second.frames] if t > anchor_t)
    assert f"Time check against the anchor at 00:22.5 (right after): {format_ts(answer_t)} is " in out["reasoning"]
    assert f"{answer_t - anchor_t:.1f} s after it." in out["reasoning"] and "wrong side" not in out["reasoning"]


@pytest.mark.unit
async def test_videoarms_controller_finds_the_anchor_then_looks_right_after_it(
    counter_video: Path, tmp_path: Path
) -> None:
    """Step 1 says the relation; scene_snapper names the anchor's frame; step 2's clip is held to the window."""
    seen: dict[str, list[Any]] = {"step": [], "step_schema": [], "snap": [], "tools": [], "anchor_frame": []}

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "ControllerStep":
            seen["step"].append(text)
            seen["step_schema"].append(schema)
            if len(seen["step"]) == 1:
                call = {"tool": "scene_snapper", "ranges": [], "num_frames": 30}
                return {"reason": "survey for the 3", "call": call, "relation": "right after", "anchor": "the 3"}
            if len(seen["step"]) == 2:  # asks for the whole video: held to the window after the anchor
                call = {"tool": "clip_analyzer", "start": 0.0, "end": 80.0, "question": "which number comes next?"}
                return {"reason": "right after it", "call": call}
            return {"reason": "settled", "call": {"tool": "answer"}}
        if name in ("SnapReport", "ClipReport"):
            seen["tools"].append((text, schema))
            reply: dict[str, Any] = (
                {"caption": "numbers", "frames": []}
                if name == "SnapReport"
                else {"answer": "a 7", "confidence": 0.9, "frames": []}
            )
            if "anchor" in schema["properties"]:
                seen["anchor_frame"].append(schema["properties"]["anchor"]["items"]["enum"][8])
                reply["anchor"] = seen["anchor_frame"][-1:]
            return reply
        if name == "FinalDecision":
            lines = dict(re.findall(r"^\[([A-Z]+)\] (.*)$", text, re.MULTILINE))
            anchor = next(label for label, line in lines.items() if "shows the anchor" in line)
            clip = next(label for label, line in lines.items() if "clip_analyzer on" in line)
            return {"judgements": [], "answer": 1, "reasoning": "the clip shows it", "evidence": [anchor, clip]}
        return default_reply(name, text, schema)

    out, chat = await run("videoarm", counter_video, tmp_path, script)
    assert out["relation"] == Relation(kind="right after", anchor="the 3")
    first, second = out["memory"]
    # (a) the anchor is searched first: step 1 asks the relation, its survey is asked for the anchor's frame
    assert "relation" in seen["step_schema"][0]["properties"] and "relation" not in seen["step_schema"][1]["properties"]
    (snap_text, snap_schema), (_, clip_schema) = seen["tools"]
    assert 'Also give "anchor": the frame index of the frame that shows the 3' in snap_text
    assert "anchor" in snap_schema["properties"] and "anchor" not in clip_schema["properties"]
    assert first.anchor == seen["anchor_frame"][0] == first.frames[8]
    anchor_t = (first.anchor + 0.5) / 25.0  # the middle of the frame's time on screen (25 frames a second)
    # (b) the next look goes to the window after it: one clip_analyzer stretch, 50 frames at 2 a second = 25 s
    start, end = anchor_t, anchor_t + 25.0
    assert f"the window after it is {start:.1f} to {end:.1f} s" in seen["step"][1]
    calls = variants(seen["step_schema"][1])
    assert calls["clip_analyzer"]["start"]["minimum"] == pytest.approx(start, abs=1e-3)
    assert calls["clip_analyzer"]["end"]["maximum"] == pytest.approx(end, abs=1e-3)
    assert second.tool == "clip_analyzer" and second.ranges == [(pytest.approx(start), pytest.approx(end))]
    assert len(second.frames) == 50 and all(start <= (f + 0.5) / 25.0 <= end + 0.04 for f in second.frames)
    assert any("held to" in r.detail and "the window beside the anchor" in r.detail for r in out["repairs"])
    assert "the time relation's anchor is seen in frame" in seen["step"][1]
    # (c) the decision is told the anchor's time; its reasoning places the clip's answer after it
    decide = next(t for n, t in chat.seen if n == "FinalDecision")
    assert f"The anchor is [B] at {format_ts(anchor_t)} ({anchor_t:.1f} s)" in decide
    clip_t = (second.frames[len(second.frames) // 2] + 0.5) / 25.0
    assert (
        f"Time check against the anchor at {format_ts(anchor_t)} (right after): {format_ts(clip_t)} is "
        in out["reasoning"]
    )
    assert f"{clip_t - anchor_t:.1f} s after it." in out["reasoning"] and "wrong side" not in out["reasoning"]
    assert out["answer_index"] == 1


def _clip(call: dict[str, Any], held: Interval) -> tuple[dict[str, Any], str]:
    """A hold for the test: a call's span clipped to ``held``, with a note when it moved."""
    start, end = max(call["start"], held.start), min(call["end"], held.end)
    moved = (start, end) != (call["start"], call["end"])
    return {**call, "start": start, "end": end}, f"held to {start:g}-{end:g}" if moved else ""


@pytest.mark.unit
def test_a_thinker_step_settles_the_relation_it_was_asked_and_the_window_it_is_held_to() -> None:
    class Reply:  # a step reply that names a relation (the fields RELATION_FIELDS adds)
        relation, anchor, other_anchor = "right after", "the 3", ""

    first = RelationStep(asked=True, held=None, hold=_clip)
    assert first.window is None
    assert first.kept(Reply()) == {"relation": Relation(kind="right after", anchor="the 3")}
    # A first step with no usable reply: the question is searched as one without a relation.
    update: dict[str, Any] = {"repairs": []}
    call = {"tool": "skim", "start": 0.0, "end": 80.0}
    assert first.settle(call, update, "plan", 1) == call and update["relation"] == Relation()
    # A relation the reply gave is kept as it is.
    given = {"relation": Relation(kind="first")}
    assert first.settle(call, given, "plan", 1) == call and given["relation"] == Relation(kind="first")

    held = RelationStep(asked=False, held=Interval(22.5, 30.5), hold=_clip)
    assert held.window == (22.5, 30.5) and held.kept(Reply()) == {}
    earlier = Repair(node="plan", round=2, kind="fallback", detail="the first reply could not be used")
    update = {"repairs": [earlier]}
    assert held.settle(call, update, "plan", 2) == {"tool": "skim", "start": 22.5, "end": 30.5}
    assert "relation" not in update
    assert update["repairs"] == [earlier, Repair(node="plan", round=2, kind="dropped", detail="held to 22.5-30.5")]
    # A call already inside the window runs as chosen, and no repair is recorded.
    inside_call, update = {"tool": "skim", "start": 24.0, "end": 26.0}, {}
    assert held.settle(inside_call, update, "plan", 3) == inside_call and update == {}
