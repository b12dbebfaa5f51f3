"""The uniform-sampling baseline graph with a scripted model: sheets, one call, cited frames, failures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agent_helpers import ScriptedChat, default_reply, make_context, run_graph
from videoatlas.agents.uniform.answer import sheet_intervals
from videoatlas.agents.uniform.graph import build_uniform_graph
from videoatlas.prompts import builtin_template
from videoatlas.runtime.context import RunConfig

pytestmark = pytest.mark.e2e


def test_frames_round_up_to_whole_sheets() -> None:
    assert len(sheet_intervals(100.0, 64, 8)) == 1
    spans = sheet_intervals(100.0, 65, 8)
    assert len(spans) == 2 and spans[0].end == spans[1].start == 50.0
    assert len(sheet_intervals(100.0, 16, 4)) == 1


async def _run_uniform(
    video: Path, tmp: Path, script: Any, frames: int = 128, choices: list[str] | None = None
) -> tuple[dict[str, Any], ScriptedChat]:
    config = RunConfig.of(agent="uniform", frames=frames, k=4, cell_px=64)
    ctx, chat, source = make_context(video, tmp, script, config)
    try:
        graph = build_uniform_graph(InMemorySaver())
        out = await graph.ainvoke(
            {"question": "What number is shown?", "choices": ["one", "two", "three"] if choices is None else choices},
            {"configurable": {"thread_id": "u"}},
            context=ctx,
        )
    finally:
        source.close()
    return out, chat


async def _ask(video: Path, tmp: Path, reply: Any, frames: int = 128) -> tuple[dict[str, Any], list[str]]:
    out, chat = await _run_uniform(video, tmp, lambda name, text, schema: reply, frames)
    return out, [name for name, _ in chat.seen]


async def test_one_call_over_sheets_and_cited_frames_become_evidence(counter_video: Path, tmp_path: Path) -> None:
    reply = {"judgements": [], "answer": 2, "reasoning": "seen", "evidence": ["1/3", "[8/15]", "9/1", "2/99", "B"]}
    out, calls = await _ask(counter_video, tmp_path, reply)
    assert calls == ["FinalDecision"]  # one call, whatever the number of sheets
    assert out["answer_index"] == 2 and out["answer"] == "three"
    # 128 frames at K=4: 8 sheets of 16 cells over the 80 s video, 10 s each; citations that name no
    # shown cell (sheet 9, cell 99, a letter) are dropped.
    cells = {e.place: e for e in out["evidence"]}
    assert set(cells) == {"cell 1/3", "cell 8/15"}
    assert cells["cell 1/3"].start == pytest.approx(3 * 10 / 16) and cells["cell 8/15"].end == pytest.approx(80.0)
    assert cells["cell 8/15"].where == {"sheet": 8, "cell": 15}
    assert sorted(out["cited"]) == sorted(e.id for e in out["evidence"])
    assert out["cost"].calls == 1
    # The frame ledger: 128 frames shown once each, all distinct moments.
    assert out["cost"].frames_sent == 128 and out["cost"].frames_viewed == 128


async def test_an_unusable_reply_is_never_guessed(counter_video: Path, tmp_path: Path) -> None:
    out, calls = await _ask(counter_video, tmp_path, "I think it is two", frames=16)
    assert calls == ["FinalDecision", "FinalDecision"]  # the re-ask, then give up
    assert out["answer_index"] is None and out["answer"] == ""
    assert out["cost"].failed_calls == 1


def _final_call(chat: ScriptedChat) -> tuple[dict[str, Any], str]:
    """The response_format and the prompt text of the run's final decision (its last call)."""
    assert chat.seen[-1][0] == "FinalDecision"
    return chat.formats[-1], chat.seen[-1][1]


def _cited_labels(fmt: dict[str, Any]) -> dict[str, Any]:
    """Take the cited-labels fields out of a decision's response_format (in place); return the top one."""
    schema = fmt["json_schema"]["schema"]
    top = schema["properties"].pop("evidence")
    top.pop("title", None)
    for definition in schema.get("$defs", {}).values():
        definition["properties"].pop("evidence", None)
    for obj in [schema, *schema.get("$defs", {}).values()]:
        obj["required"] = [k for k in obj["required"] if k in obj["properties"]]
    return dict(top)


@pytest.mark.parametrize("choices", [["one", "two", "three"], []], ids=["multiple-choice", "open"])
async def test_both_agents_final_call_asks_for_the_same_answer(
    counter_video: Path, tmp_path: Path, choices: list[str]
) -> None:
    # One answering rule: for the same question, Video-RLM's decision and the baseline's single call
    # send the same response_format and the same reply-format lines, so they are held to (and
    # scored by) the same answer format.
    _, rlm_chat, _ = await run_graph(
        counter_video, tmp_path / "rlm", default_reply, RunConfig.of(cell_px=64, workers=1, rounds=1), choices=choices
    )
    _, uniform_chat = await _run_uniform(counter_video, tmp_path / "uniform", default_reply, 16, choices)
    rlm_format, rlm_text = _final_call(rlm_chat)
    uniform_format, uniform_text = _final_call(uniform_chat)
    # The one difference: the labels each may cite are those it shows (none collected here; the
    # baseline's SHEET/CELL labels).
    rlm_labels, uniform_labels = _cited_labels(rlm_format), _cited_labels(uniform_format)
    assert rlm_labels == {"type": "array", "items": {"type": "string"}, "maxItems": 0}
    assert uniform_labels["items"]["enum"][:2] == ["1/0", "1/1"] and len(uniform_labels["items"]["enum"]) == 16
    assert rlm_format == uniform_format
    assert rlm_format["json_schema"]["strict"] is True
    lines = builtin_template("format_choices.note" if choices else "format_open.note").text.rstrip("\n")
    assert lines in rlm_text and lines in uniform_text


async def test_both_agents_record_a_failed_final_call_as_no_answer(counter_video: Path, tmp_path: Path) -> None:
    def no_decision(name: str, text: str, schema: dict[str, Any]) -> Any:
        return "I think it is two" if name == "FinalDecision" else default_reply(name, text, schema)

    rlm, _, _ = await run_graph(
        counter_video, tmp_path / "rlm", no_decision, RunConfig.of(cell_px=64, workers=1, rounds=1), choices=["a", "b"]
    )
    uniform, _ = await _run_uniform(counter_video, tmp_path / "uniform", no_decision, 16, ["a", "b"])
    for out in (rlm, uniform):
        assert out["answer_index"] is None and out["answer"] == ""  # scored wrong by the eval, never guessed
        assert out["cost"].failed_calls == 1 and out["stop_reason"].endswith("failed")
