"""Time relations in VideoSeek, EEA and VideoARM, each in its own style, over the shared relation module.

Graph tests with a scripted model that names the relation "right after" and an anchor, on the
generated counter video, check from what was sent: the anchor is searched first (the tools are asked
which frame shows it), the looks that follow go to the window after the anchor's time, and the final
decision is told the anchor's time and its reasoning checks the answer's time against it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_helpers import default_reply, make_context
from videoatlas.agents.relation import Anchor, Relation, anchor_label, relation_of, relation_text, window
from videoatlas.environment.geometry import Interval
from videoatlas.runtime.config import RunConfig
from videoatlas.state.models import Evidence, FrameRef

DURATION = 80.0  # the counter video
QUESTION = "Which number is shown right after the 3?"


def ev(id_: str, time: float) -> Evidence:
    return Evidence(
        id=id_, time=time, start=time, end=time, depth=None, cell=None, description="x", confidence=0.9,
        frame=FrameRef(video="v", time=time, px=64), round=1, worker="w",
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
    assert "The anchor is seen at 00:30.0 (30.0 s)" in relation_text(relation, seen, None)


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
