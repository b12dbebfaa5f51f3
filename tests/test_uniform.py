"""The uniform-sampling baseline graph with a scripted model: sheets, one call, cited frames, failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agent_helpers import make_context
from videoatlas.graph.context import RunConfig
from videoatlas.graph.uniform import build_uniform_graph
from videoatlas.nodes.answer_uniform import sheet_intervals

pytestmark = pytest.mark.e2e


def test_frames_round_up_to_whole_sheets() -> None:
    assert len(sheet_intervals(100.0, 64, 8)) == 1
    spans = sheet_intervals(100.0, 65, 8)
    assert len(spans) == 2 and spans[0].end == spans[1].start == 50.0
    assert len(sheet_intervals(100.0, 16, 4)) == 1


async def _ask(video: Path, tmp: Path, reply: Any, frames: int = 128) -> tuple[dict[str, Any], list[str]]:
    config = RunConfig(agent="uniform", frames=frames, k=4, cell_px=64)
    ctx, chat, source = make_context(video, tmp, lambda name, text, schema: reply, config)
    try:
        graph = build_uniform_graph(InMemorySaver())
        out = await graph.ainvoke(
            {"question": "What number is shown?", "choices": ["one", "two", "three"]},
            {"configurable": {"thread_id": "u"}},
            context=ctx,
        )
    finally:
        source.close()
    return out, [name for name, _ in chat.seen]


async def test_one_call_over_sheets_and_cited_frames_become_evidence(counter_video: Path, tmp_path: Path) -> None:
    reply = {"judgements": [], "answer": 2, "reasoning": "seen", "evidence": ["1/3", "[8/15]", "9/1", "2/99", "B"]}
    out, calls = await _ask(counter_video, tmp_path, reply)
    assert calls == ["FinalDecision"]  # one call, whatever the number of sheets
    assert out["answer_index"] == 2 and out["answer"] == "three"
    # 128 frames at K=4: 8 sheets of 16 cells over the 80 s video, 10 s each; citations that name no
    # shown cell (sheet 9, cell 99, a letter) are dropped.
    cells = {e.cell: e for e in out["evidence"]}
    assert set(cells) == {"1/3", "8/15"}
    assert cells["1/3"].start == pytest.approx(3 * 10 / 16) and cells["8/15"].end == pytest.approx(80.0)
    assert sorted(out["cited"]) == sorted(e.id for e in out["evidence"])
    assert out["cost"].calls == 1


async def test_an_unusable_reply_is_never_guessed(counter_video: Path, tmp_path: Path) -> None:
    out, calls = await _ask(counter_video, tmp_path, "I think it is two", frames=16)
    assert calls == ["FinalDecision", "FinalDecision"]  # the re-ask, then give up
    assert out["answer_index"] is None and out["answer"] == ""
    assert out["cost"].failed_calls == 1
