"""Video-RLM time relations: the search task records the relation, the anchor bounds the search, the decision checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_helpers import default_reply, run_graph, step
from videoatlas.agents.relation import Anchor, Relation, relation_text, time_check
from videoatlas.agents.video_rlm.agent import AGENT
from videoatlas.agents.video_rlm.relation import task_sentence, window_hints
from videoatlas.agents.video_rlm.state.models import Hint, found_at
from videoatlas.runtime.context import RunConfig
from videoatlas.state.models import Evidence, FrameRef

PROMPTS = AGENT.load_prompts("default")


def ev(id_: str, time: float) -> Evidence:
    return Evidence(
        id=id_,
        time=time,
        start=time - 1.0,
        end=time + 1.0,
        description="x",
        confidence=0.9,
        frame=FrameRef(video="v", time=time, px=64),
        **found_at(1, "r1w1", 1, None),
    )


@pytest.mark.unit
def test_the_relation_says_what_to_search_and_in_which_window() -> None:
    after = Relation(kind="right after", anchor="the red banner")
    assert after.anchored and "right after the red banner: find that anchor first" in task_sentence(PROMPTS, after)
    assert "INVESTIGATE after" in task_sentence(PROMPTS, after)
    assert "INVESTIGATE before" in task_sentence(PROMPTS, Relation(kind="just before", anchor="the goal"))
    assert "between the intro and the credits" in task_sentence(
        PROMPTS, Relation(kind="between", anchor="the intro", other="the credits")
    )
    assert "first one in the whole video" in task_sentence(PROMPTS, Relation(kind="first"))
    assert task_sentence(PROMPTS, Relation()) == "" and not Relation().anchored
    assert task_sentence(PROMPTS, Relation(kind="right after")) == ""  # no anchor named: nothing to search by


@pytest.mark.unit
def test_the_window_lies_on_the_relations_side_of_the_anchor() -> None:
    anchor = Anchor(evidence="e1", time=1000.0, start=995.0, end=1005.0)
    # a 3-hour video: one root cell of an 8x8 grid is 168.75 s
    assert window_hints(Relation(kind="right after", anchor="a"), anchor, 10_800.0, 8) == [
        Hint(start=1005.0, end=1005.0 + 168.75)
    ]
    assert window_hints(Relation(kind="just before", anchor="a"), anchor, 10_800.0, 8) == [
        Hint(start=995.0 - 168.75, end=995.0)
    ]
    end = Anchor(evidence="e1", time=79.0, start=78.0, end=80.0)
    assert window_hints(Relation(kind="right after", anchor="a"), end, 80.0, 8) == []  # nothing after the end


@pytest.mark.unit
def test_the_time_check_names_an_answer_on_the_wrong_side_of_the_anchor() -> None:
    relation = Relation(kind="right after", anchor="the banner")
    anchor = Anchor(evidence="a", time=5400.0, start=5399.0, end=5401.0)
    good = time_check(relation, anchor, [ev("a", 5400.0), ev("b", 5412.5)])
    assert "1:30:12.5 is 12.5 s after it" in good and "wrong side" not in good
    bad = time_check(relation, anchor, [ev("c", 720.0)])
    assert "4680.0 s before it" in bad and "wrong side of the anchor: 12:00.0" in bad
    assert time_check(Relation(), anchor, [ev("c", 720.0)]) == ""
    assert time_check(relation, None, [ev("c", 720.0)]) == ""
    text = relation_text(PROMPTS, relation, anchor, "B")
    assert "The anchor is [B] at 1:30:00.0" in text and "which side of the anchor" in text
    assert "not identified" in relation_text(PROMPTS, relation, None, None)
    assert relation_text(PROMPTS, Relation(), None, None) == "(the question asks no time relation)"


@pytest.mark.e2e
async def test_a_right_after_question_finds_the_anchor_then_searches_its_window(
    counter_video: Path, tmp_path: Path
) -> None:
    """The search task records the relation; once the anchor is named, the next round searches right after it;
    the decision is told the anchor's time and its reasoning checks the answer's time against it."""
    seen: dict[str, list[str]] = {"worker": [], "uncertainty": [], "schemas": []}

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "SearchTask":
            return {
                "search_task": "find the number shown right after the 3",
                "relation": "right after",
                "anchor": "the number 3",
                "other_anchor": "",
            }
        if name == "GlobalProbe":
            n = schema["properties"]["cells"]["minItems"]
            return {"cells": [2, 30, 61, 12][:n], "reason": "r"}
        if name == "WorkerStep":
            seen["worker"].append(text)
            if "Evidence already collected in this region:\n(nothing yet)" in text:
                return step("ADD_TO_SCRATCHPAD", [7], [{"cell": 7, "description": "a number", "confidence": 0.8}])
            return step("FINISHED")
        if name == "UncertaintyAnalysis":
            seen["uncertainty"].append(text)
            seen["schemas"].append(",".join(sorted(schema["properties"])))
            reply = {**default_reply(name, text, schema), "sufficient": len(seen["uncertainty"]) > 1}
            if "anchor" in schema["properties"]:
                reply["anchor"] = ["A"]
            return reply
        if name == "FinalDecision":
            labels = schema["properties"]["evidence"]["items"].get("enum") or []
            return {"judgements": [], "answer": 1, "reasoning": "the next number", "evidence": labels[:2]}
        return default_reply(name, text, schema)

    cfg = RunConfig.of(cell_px=64, workers=1, rounds=3, traversal="dfs")
    out, chat, _ = await run_graph(
        counter_video, tmp_path, script, cfg, question="Which number is shown right after the 3?"
    )
    assert out["relation"] == Relation(kind="right after", anchor="the number 3")
    assert "Relation: the answer lies right after the number 3" in out["search_task"]
    assert all("Relation: the answer lies right after the number 3" in t for t in seen["worker"])
    assert "anchor" in seen["schemas"][0] and "anchor" not in seen["schemas"][1]  # asked until found
    assert 'Also give "anchor"' in seen["uncertainty"][0]
    anchor = out["anchor"]
    first = next(e for e in out["evidence"] if e.id == anchor.evidence)
    assert anchor.time == first.time
    round2 = [r.target for r in out["reports"] if r.round == 2]
    assert round2[0].source == "hint-range" and round2[0].start == pytest.approx(anchor.end)
    decide_text = next(t for n, t in chat.seen if n == "FinalDecision")
    assert "The anchor is [A]" in decide_text
    assert "Time check against the anchor" in out["reasoning"]
