"""EEA's rounds with a scripted model on the generated counter video: each child is judged, and its reward is
the model's score for it; without UARF the reward alone is what a stretch is worth.

The frame index is a small fake (one frame a second, one direction for every frame and query), as in
``test_agents_relation.py``: what is shown is the real video; which frames retrieval finds is not
what is checked here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agent_helpers import action_logprobs, default_reply, make_context, user_head
from videoatlas.agents.eea import discover as discover_module
from videoatlas.agents.eea import update as update_module
from videoatlas.agents.eea.evaluate import candidates
from videoatlas.agents.eea.graph import build_graph
from videoatlas.agents.eea.settings import EEASettings
from videoatlas.agents.registry import get_agent
from videoatlas.environment.timefmt import format_ts
from videoatlas.runtime.config import RunConfig
from videoatlas.runtime.frame_index import FrameIndex
from videoatlas.state.models import IndexInfo

pytestmark = pytest.mark.unit
DURATION = 80.0  # the counter video


@pytest.fixture
def fake_index(monkeypatch: pytest.MonkeyPatch) -> None:
    times = np.arange(80) + 0.5
    vectors = np.tile(np.array([1.0, 0.0], np.float32), (80, 1))

    async def index(ctx: Any, settings: Any) -> tuple[FrameIndex, IndexInfo]:
        info = IndexInfo(model="fake", fps=1.0, frames=80, build_s=0.0, embedded=0, reused=True)
        return FrameIndex(times, vectors), info

    async def queries(ctx: Any, settings: Any, texts: Sequence[str]) -> tuple[np.ndarray, int]:
        return np.tile(np.array([1.0, 0.0], np.float32), (len(texts), 1)), 0

    for module in (discover_module, update_module):
        monkeypatch.setattr(module, "frame_index", index)
        monkeypatch.setattr(module, "query_vectors", queries)


def judging(name: str, text: str, schema: dict[str, Any]) -> Any:
    """Children scored 10, 20, 30... in the order the schema lists them; the last candidate explored (selection is
    asked once: the second round is the last)."""
    if name == "SearchQueries":
        return {"search_queries": ["a number on screen"]}
    if name == "SegmentRewards":
        keys = [k for k in schema["properties"] if k.startswith("segment_")]
        reply: dict[str, Any] = {k: {"explanation": f"child {k}", "score": 10 * (i + 1)} for i, k in enumerate(keys)}
        return {**reply, "anchor": []} if "anchor" in schema["properties"] else reply
    if name == "Selection":
        ids = schema["$defs"]["ExploreSegment"]["properties"]["segment"]["enum"]
        return {"thought": "the best one", "step": {"action": "explore", "segment": ids[-1]}}
    return default_reply(name, text, schema)


async def judged(video: Path, tmp: Path, config: RunConfig) -> tuple[dict[str, Any], Any]:
    """EEA's run on the counter video with :func:`judging` replying: its output and the scripted chat."""
    ctx, chat, source = make_context(video, tmp, judging, config)
    try:
        out = await build_graph().ainvoke(
            {"question": "What number is shown?", "choices": ["one", "two"]}, {"recursion_limit": 100}, context=ctx
        )
    finally:
        source.close()
    return out, chat


@pytest.mark.parametrize("uarf", [True, False])
async def test_each_child_gets_the_models_score_and_without_uarf_the_reward_is_its_worth(
    counter_video: Path, tmp_path: Path, fake_index: None, uarf: bool
) -> None:
    config = RunConfig.of(agent="eea", cell_px=64, expansions=2, query_update=False, uarf=uarf)
    out, chat = await judged(counter_video, tmp_path, config)
    segments = {s.id: s for s in out["segments"]}
    assert len(out["rounds"]) == 2
    for rnd in out["rounds"]:
        kids = [segments[c] for c in rnd.children]
        # The children were judged, each by its own score: 10, 20, 30... in the order they were asked.
        assert [k.reward for k in kids] == pytest.approx([0.1 * (i + 1) for i in range(len(kids))])
        assert [k.explanation for k in kids] == [f"child segment_{k.id}" for k in kids]
    offered = candidates(out["segments"], (EEASettings().expand_frames + 1) / 25.0)
    assert offered and len({s.reward for s in offered}) > 1
    if uarf:  # the reward fused with the query score: not the reward alone
        assert any(s.fused != pytest.approx(s.reward) for s in offered)
    else:  # every stretch offered has h = r
        assert all(s.fused == s.reward for s in offered)
    assert [n for n, _ in chat.seen].count("SegmentRewards") == len(out["rounds"])


async def test_rounds_open_with_the_search_so_far_and_each_call_repeats_the_last_ones_start(
    counter_video: Path, tmp_path: Path, fake_index: None
) -> None:
    """Laid out for a server's prefix cache: every call states the question first; the expansion and the selection
    then give the search so far, round by round, which only grows; the expansion's frames follow it, and the
    query update sends the same frames. So a round's selection starts with its expansion's text, and the next
    expansion starts with the selection's text, word for word."""
    config = RunConfig.of(agent="eea", cell_px=64, expansions=3, query_update=True)
    out, chat = await judged(counter_video, tmp_path, config)
    names = [n for n, _ in chat.seen]
    assert names == ["SearchQueries", *["SegmentRewards", "SearchQueries", "Selection"] * 2, "SegmentRewards",
                     "SearchQueries", "FinalDecision"]  # fmt: skip
    heads = [user_head(m) for m in chat.messages]
    question = "Question: What number is shown?\nChoices:\nA. one\nB. two\n\n"
    assert all(h.startswith(question) for h in heads[1:])  # every call with images: the question first
    kinds = ("SegmentRewards", "SearchQueries", "Selection")
    evaluate, update, select = ([i for i, n in enumerate(names) if n == kind and i > 0] for kind in kinds)
    segments = {s.id: s for s in out["segments"]}
    for r, (ev, sel) in enumerate(zip(evaluate, select, strict=False), start=1):
        # The selection's text before its frames: the expansion's, and this round's scores after it.
        assert heads[sel].startswith(heads[ev].rsplit("\n", 2)[0] if r == 1 else heads[ev])
        kids = out["rounds"][r - 1].children
        assert f"Round {r} opened stretch {out['rounds'][r - 1].segment}" in heads[sel]
        assert all(f"stretch {k}: " in heads[sel] and f"stretch {k}: " not in heads[ev] for k in kids)
        first = segments[kids[0]]  # a stretch by its clock times only, as the frames' labels give them
        where = f"{format_ts(first.start, 1)}-{format_ts(first.end, 1)}"
        line = f"stretch {first.id}: {where}, score {round(first.reward * 100)}: child segment_{first.id}"
        assert line in heads[sel].splitlines()
        # The next expansion starts where the selection did, word for word.
        assert heads[evaluate[r]] == heads[sel]
    for ev, up in zip(evaluate, update, strict=True):  # the query update sends the frames just scored
        assert chat.images[up] == chat.images[ev] and len(chat.images[ev]) == 1


async def eea_run(
    video: Path, tmp: Path, answers: Sequence[bool], p_answer: Sequence[float], confidence: float
) -> tuple[dict[str, Any], Any]:
    """EEA whose selection answers at its n-th reply when ``answers[n]`` (else explores the first candidate listed);
    children scored 10, 20, 30... in order."""
    replies = iter(answers)

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "SearchQueries":
            return {"search_queries": ["a number on screen"]}
        if name == "SegmentRewards":
            keys = [k for k in schema["properties"] if k.startswith("segment_")]
            return {k: {"explanation": k, "score": 10 * (i + 1)} for i, k in enumerate(keys)}
        if name == "Selection":
            first = schema["$defs"]["ExploreSegment"]["properties"]["segment"]["enum"][0]
            step = {"action": "answer"} if next(replies) else {"action": "explore", "segment": first}
            return {"thought": "weighing", "step": step}
        return default_reply(name, text, schema)

    config = RunConfig.of(agent="eea", cell_px=64, expansions=3, query_update=False, confidence=confidence)
    ctx, chat, source = make_context(video, tmp, script, config)
    chat.logprobs = action_logprobs("Selection", "action", p_answer, "explore")
    try:
        out = (
            await get_agent("eea")
            .build(None)
            .ainvoke(
                {"question": "What number is shown?", "choices": ["one", "two"]}, {"recursion_limit": 100}, context=ctx
            )
        )
    finally:
        source.close()
    return out, chat


async def test_eea_holds_back_an_unsure_answer_and_expands_the_best_scored_stretch(
    counter_video: Path, tmp_path: Path, fake_index: None
) -> None:
    # Round 1's selection answers at 0.79 (held back), round 2's at 0.81 (stands).
    out, chat = await eea_run(counter_video, tmp_path, [True, True], [0.79, 0.81], 0.8)
    rounds = out["rounds"]
    assert len(rounds) == 2 and out["stop_reason"] == "the policy answered"
    held = rounds[0]
    assert "[answer held back: P(answer) 0.79 below --confidence 0.8]" in held.thought
    # What was expanded instead: the candidate with the best fused score offered at round 1's selection.
    expanded = int(held.choice.removeprefix("segment "))
    segments = {s.id: s for s in out["segments"]}
    offered = [s for s in out["segments"] if s.round == 1]
    assert segments[expanded].fused == max(s.fused for s in offered)
    assert rounds[1].choice == "answer"
    assert [n for n, _ in chat.seen].count("Selection") == 2


async def test_eea_answers_when_the_exploration_it_chose_leaned_to_answering_past_a_low_threshold(
    counter_video: Path, tmp_path: Path, fake_index: None
) -> None:
    out, _ = await eea_run(counter_video, tmp_path, [False, False], [0.2, 0.4], 0.3)
    rounds = out["rounds"]
    assert [r.choice for r in rounds][-1] == "answer" and len(rounds) == 2
    assert out["stop_reason"] == "the policy answered: P(answer) 0.40 reached --confidence 0.3"


NEW_QUERIES = ["a digit drawn large on screen", "the counter showing a round number"]


def proposing(name: str, text: str, schema: dict[str, Any]) -> Any:
    """:func:`judging`, with the same new queries wherever a round's are asked for: with the expansion's scores or
    in a call of their own."""
    if name == "SegmentRewards" and "search_queries" in schema["properties"]:
        return {**judging(name, text, schema), "search_queries": NEW_QUERIES}
    if name == "SearchQueries" and "relation" not in schema["properties"]:
        return {"search_queries": NEW_QUERIES}
    return judging(name, text, schema)


async def test_the_rounds_queries_asked_with_the_scores_search_as_a_call_of_their_own_does(
    counter_video: Path, tmp_path: Path, fake_index: None
) -> None:
    """``update_call`` off: the expansion's call, shown the round's frames and the queries held, also proposes the
    round's new queries, and no update call is made; given the same queries, the search is the paper's, round for
    round (the same queries kept, anchors, frames, stretches opened), with one call fewer a round."""
    runs = {}
    for own_call in (True, False):
        config = RunConfig.of(agent="eea", cell_px=64, expansions=3, query_update=True, update_call=own_call)
        ctx, chat, source = make_context(counter_video, tmp_path / str(own_call), proposing, config)
        try:
            out = await build_graph().ainvoke(
                {"question": "What number is shown?", "choices": ["one", "two"]}, {"recursion_limit": 100}, context=ctx
            )
        finally:
            source.close()
        runs[own_call] = (out, chat)
    (paper, paper_chat), (merged, merged_chat) = runs[True], runs[False]
    assert [n for n, _ in merged_chat.seen] == ["SearchQueries", *["SegmentRewards", "Selection"] * 2,
                                                "SegmentRewards", "FinalDecision"]  # fmt: skip
    assert len(paper_chat.seen) - len(merged_chat.seen) == 3  # the three update calls
    assert merged["queries"] == paper["queries"] == ["a number on screen", *NEW_QUERIES]
    kept = [NEW_QUERIES, [], []]  # later rounds repeat them: dropped
    assert [r.new_queries for r in merged["rounds"]] == [r.new_queries for r in paper["rounds"]] == kept
    assert [r.proposed for r in merged["rounds"]] == [NEW_QUERIES] * 3
    assert [(r.segment, r.frames, r.children) for r in merged["rounds"]] == [
        (r.segment, r.frames, r.children) for r in paper["rounds"]
    ]
    assert merged["anchors"] == paper["anchors"] and merged["answer"] == paper["answer"]
    # The expansion asks for them, naming the queries held; the paper's expansion does not.
    asks = [text for name, text in merged_chat.seen if name == "SegmentRewards"]
    assert all('Also give "search_queries"' in t and "- a number on screen" in t for t in asks)
    assert f"- {NEW_QUERIES[0]}" not in asks[0] and f"- {NEW_QUERIES[0]}" in asks[1]
    assert not any("search_queries" in text for name, text in paper_chat.seen if name == "SegmentRewards")
