"""Every agent's open answer can decline: a final decision that found no answer leaves the question unanswered.

Each agent's graph runs on the counter video with a scripted model that goes straight to its final
decision on an open question (no choices). One script answers with ``found`` true and a value: the run
is answered, grounded when it cites what the agent gathered, "without evidence" when it cites nothing.
The other says ``found`` false (with a guess in its answer text): the run has no answer and is declined,
which the run's result, ``ask``'s answer line and its ``--json`` report as unanswered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agent_helpers import answer_logprobs, default_reply, make_context
from videoatlas.agents.registry import get_agent
from videoatlas.cli.run_view import print_result
from videoatlas.prompts import builtin_template
from videoatlas.runs.result import RunResult, result_from_state
from videoatlas.runtime.config import RunConfig
from videoatlas.runtime.frame_index import FrameIndex
from videoatlas.state.models import IndexInfo

pytestmark = pytest.mark.unit

QUESTION = "What number does the counter show first?"
AGENTS: dict[str, dict[str, Any]] = {
    "video-rlm": {"workers": 1, "rounds": 1},
    "videoseek": {},
    "videoarm": {},
    "eea": {"top_k": 1, "query_update": False, "expansions": 1},
    "uniform": {"frames": 16, "k": 4},
}
GROUNDED = {"video-rlm": False, "videoseek": False, "videoarm": False, "eea": True, "uniform": True}
"""Whether the agent has gathered anything to cite by its final decision when it goes there at once."""

FOUND = {"found": True, "answer": "7", "reasoning": "the counter reads 7"}
DECLINED = {"found": False, "answer": "maybe 7", "reasoning": "no number is legible in what was seen"}


def script_for(decision: dict[str, Any]) -> Any:
    """Each agent's shortest way to its final decision, which replies ``decision`` citing the first label it may."""

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "FinalDecision":
            labels = schema["properties"]["evidence"]["items"].get("enum") or []
            return {**decision, "evidence": labels[:1]}
        if name == "PlannerTurn":
            return {"thought": "enough seen", "call": {"tool": "answer"}}
        if name == "ControllerStep":
            return {"reason": "enough seen", "call": {"tool": "answer"}}
        if name == "SearchQueries":
            return {"search_queries": ["a number on screen"]}
        if name == "SegmentRewards":
            return {key: {"explanation": "numbers", "score": 50} for key in schema["properties"]}
        if name == "Selection":
            return {"thought": "enough seen", "step": {"action": "answer"}}
        return default_reply(name, text, schema)

    return script


@pytest.fixture
def no_embeddings(monkeypatch: pytest.MonkeyPatch) -> None:
    """EEA's frame index without an embedding endpoint: one frame a second, every query alike."""
    from videoatlas.agents.eea import discover

    async def index(ctx: Any, settings: Any) -> tuple[FrameIndex, IndexInfo]:
        info = IndexInfo(model="fake", fps=1.0, frames=80, build_s=0.0, embedded=0, reused=True)
        return FrameIndex(np.arange(80) + 0.5, np.tile(np.array([1.0, 0.0], np.float32), (80, 1))), info

    async def queries(ctx: Any, settings: Any, texts: Sequence[str]) -> tuple[np.ndarray, int]:
        return np.tile(np.array([1.0, 0.0], np.float32), (len(texts), 1)), 0

    monkeypatch.setattr(discover, "frame_index", index)
    monkeypatch.setattr(discover, "query_vectors", queries)


async def run_open(
    agent: str,
    video: Path,
    tmp: Path,
    decision: dict[str, Any],
    choices: list[str] | None = None,
    logprobs: Any = None,
) -> tuple[RunResult, Any]:
    """The agent's run on the open question (or on ``choices``), as the run's result, and its chat.

    ``logprobs``: the scripted server's log-probabilities (``ScriptedChat.logprobs``; None: it sends none)."""
    config = RunConfig.of(agent=agent, cell_px=64, **AGENTS[agent])
    ctx, chat, source = make_context(video, tmp, script_for(decision), config)
    chat.logprobs = logprobs
    try:
        graph = get_agent(agent).build(None)
        final = await graph.ainvoke(
            {"question": QUESTION, "choices": choices or []}, {"recursion_limit": 200}, context=ctx
        )
    finally:
        source.close()
    return result_from_state("r1", QUESTION, choices or [], final, 1.0, []), chat


def answer_line(result: RunResult, capsys: pytest.CaptureFixture[str]) -> str:
    """The ``answer:`` line ``ask`` prints for ``result``."""
    capsys.readouterr()
    print_result(result)
    return next(line for line in capsys.readouterr().out.splitlines() if line.startswith("answer:"))


@pytest.mark.usefixtures("no_embeddings")
@pytest.mark.parametrize("agent", list(AGENTS))
async def test_an_open_answer_that_was_found_is_answered(
    agent: str, counter_video: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result, chat = await run_open(agent, counter_video, tmp_path, FOUND)
    assert (result.answer, result.answer_index, result.declined) == ("7", None, False)
    assert result.grounded is GROUNDED[agent]
    gathered = len(result.evidence)
    unsupported = (
        ""
        if GROUNDED[agent]
        else f" (the answer cites none of the {gathered} evidence item(s) gathered)"
        if gathered
        else " (answered without evidence)"
    )
    assert answer_line(result, capsys) == f"answer: 7{unsupported}"
    assert result.as_dict()["declined"] is False
    # The final call asks whether the answer was found before it asks for the answer, and says what it means.
    schema = chat.formats[-1]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["found", "answer", "reasoning", "evidence"]
    assert schema["properties"]["found"]["type"] == "boolean" and "found" in schema["required"]
    assert "false when it does not answer the question" in schema["properties"]["found"]["description"]
    assert builtin_template("format_open.note").text.strip() in chat.seen[-1][1]


@pytest.mark.usefixtures("no_embeddings")
@pytest.mark.parametrize("agent", list(AGENTS))
async def test_an_open_answer_that_was_not_found_is_declined(
    agent: str, counter_video: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result, _ = await run_open(agent, counter_video, tmp_path, DECLINED)
    # No answer (the guess in the reply's answer text is not kept), not a failed reply, never grounded.
    assert (result.answer, result.answer_index, result.declined) == ("", None, True)
    assert result.grounded is False and result.cost.failed_calls == 0
    assert result.reasoning == "no number is legible in what was seen"
    assert not result.stop_reason.endswith("failed")
    assert answer_line(result, capsys) == "answer: no answer found (the model declined)"
    reported = result.as_dict()
    assert (reported["declined"], reported["answer"], reported["grounded"]) == (True, "", False)
    assert json.loads(json.dumps(reported))["declined"] is True


@pytest.mark.usefixtures("no_embeddings")
@pytest.mark.parametrize("agent", list(AGENTS))
async def test_a_multiple_choice_decision_never_declines(
    agent: str, counter_video: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    decision = {"judgements": [], "answer": 1, "reasoning": "the counter reads 7"}
    server = answer_logprobs({"1": 0.7, "0": 0.2, " ": 0.1})
    result, chat = await run_open(agent, counter_video, tmp_path, decision, choices=["4", "7"], logprobs=server)
    assert (result.answer, result.answer_index, result.declined) == ("7", 1, False)
    # The server's probabilities at the answer, over the two choices (0.2 and 0.7 of 0.9); only the decision and
    # the calls that decide whether to stop (--confidence) ask.
    assert (result.probabilities, result.confidence) == ([0.2222, 0.7778], 0.7778)
    assert result.as_dict()["probabilities"] == [0.2222, 0.7778] and result.as_dict()["confidence"] == 0.7778
    stopping = {"PlannerTurn", "ControllerStep", "Selection", "UncertaintyAnalysis"}
    asked = [name for (name, _), a in zip(chat.seen, chat.asked_logprobs, strict=True) if a]
    assert asked[-1] == chat.seen[-1][0] == "FinalDecision" and set(asked[:-1]) <= stopping
    capsys.readouterr()
    print_result(result)
    shown = capsys.readouterr().out
    assert "confidence: p 0.78 (A 0.22, B 0.78) (the server's probabilities at the answer)" in shown
    schema = chat.formats[-1]["json_schema"]["schema"]
    assert "found" not in schema["properties"]
    assert builtin_template("format_choices.note").text.strip() in chat.seen[-1][1]


def test_a_result_of_a_run_from_before_decisions_could_decline_is_not_declined() -> None:
    final: dict[str, Any] = {
        "answer": "",
        "answer_index": None,
        "reasoning": "no valid final decision: bad reply",
        "cited": [],
    }
    result = result_from_state("old", QUESTION, [], final, 1.0, [])
    assert result.declined is False and result.as_dict()["declined"] is False
