"""Every agent's answer carries the server's probability of each choice, read from the final decision's token
log-probabilities (agents/decision.py, llm/logprobs.py): a scripted server whose log-probabilities are chosen
here, through the graphs of Video-RLM and the uniform baseline (every agent ends in the same decision)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agent_helpers import answer_logprobs, default_reply, make_context, step
from videoatlas.agents.registry import get_agent
from videoatlas.llm.logprobs import TokenLogprob
from videoatlas.runtime.config import RunConfig

pytestmark = pytest.mark.unit
L = math.log


def answering(index: int) -> Any:
    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "FinalDecision":
            return {"judgements": [], "answer": index, "reasoning": "seen", "evidence": []}
        return default_reply(name, text, schema)

    return script


async def scored_run(
    video: Path, tmp: Path, script: Any, logprobs: Any, config: RunConfig, question: str, choices: list[str]
) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    """``config``'s agent on ``question`` with a scripted server sending ``logprobs`` (None: none): its output, the
    chat, and its final state (checkpointed in memory)."""
    ctx, chat, source = make_context(video, tmp, script, config)
    chat.logprobs = logprobs
    graph = get_agent(config.agent).build(InMemorySaver())
    thread: Any = {"configurable": {"thread_id": "t"}, "recursion_limit": 200}
    try:
        out = await graph.ainvoke({"question": question, "choices": choices}, thread, context=ctx)
    finally:
        source.close()
    return dict(out), chat, (await graph.aget_state(thread)).values


async def test_video_rlms_answer_carries_each_choices_probability(counter_video: Path, tmp_path: Path) -> None:
    config = RunConfig.of(cell_px=64, workers=1, rounds=1)
    server = answer_logprobs({"1": 0.6, "0": 0.3, "2": 0.05, "x": 0.05})
    out, chat, _ = await scored_run(
        counter_video, tmp_path, answering(1), server, config, "What number is shown?", ["one", "two", "three"]
    )
    names = [n for n, _ in chat.seen]
    # Only the final decision asks for log-probabilities (the other calls are not scored).
    assert chat.asked_logprobs == [n == "FinalDecision" for n in names] and names[-1] == "FinalDecision"
    # 0.6, 0.3 and 0.05 over the three choices ("x" is none): normalised by 0.95, rounded to 4 places.
    assert out["probabilities"] == [round(0.3 / 0.95, 4), round(0.6 / 0.95, 4), round(0.05 / 0.95, 4)]
    assert sum(out["probabilities"]) == pytest.approx(1.0, abs=1e-3)
    assert out["answer_index"] == 1 and out["confidence"] == out["probabilities"][1]


async def test_the_baselines_answer_too_and_a_server_without_logprobs_gives_none(
    counter_video: Path, tmp_path: Path
) -> None:
    async def uniform(logprobs: Any, folder: str) -> dict[str, Any]:
        config = RunConfig.of(agent="uniform", frames=16, k=4, cell_px=64)
        question, choices = "What number is shown?", ["one", "two"]
        out, _, _ = await scored_run(
            counter_video, tmp_path / folder, answering(0), logprobs, config, question, choices
        )
        return out

    sure = await uniform(answer_logprobs({"0": 0.97, "1": 0.02}), "sure")
    assert sure["probabilities"] == [round(0.97 / 0.99, 4), round(0.02 / 0.99, 4)]
    assert sure["confidence"] == sure["probabilities"][0] and sure["answer_index"] == 0
    none = await uniform(None, "none")
    assert none["answer_index"] == 0 and (none["probabilities"], none["confidence"]) == (None, None)


async def test_an_open_answer_has_its_sequence_probability(counter_video: Path, tmp_path: Path) -> None:
    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "FinalDecision":
            return {"found": True, "answer": "a counter", "reasoning": "seen", "evidence": []}
        return default_reply(name, text, schema)

    def tokens(name: str, content: str) -> list[TokenLogprob]:
        if name != "FinalDecision":
            return [TokenLogprob(content, 0.0)]
        reply = json.loads(content)
        assert reply["answer"] == "a counter"
        head, tail = content.split('"a counter"')
        parts = [(head + '"', 0.0), ("a", L(0.9)), (" counter", L(0.5)), ('"' + tail, 0.0)]
        return [TokenLogprob(t, lp) for t, lp in parts]

    config = RunConfig.of(cell_px=64, workers=1, rounds=1)
    scored, _, _ = await scored_run(counter_video, tmp_path, script, tokens, config, "What is shown?", [])
    assert scored["answer"] == "a counter" and scored["probabilities"] is None
    assert scored["confidence"] == round(0.9 * 0.5, 4)


def sufficient_logprobs(p_true: list[float]) -> Any:
    """A server whose probability of ``sufficient`` being true is ``p_true[n]`` at the n-th uncertainty analysis."""
    seen: list[int] = []

    def tokens(name: str, content: str) -> list[TokenLogprob]:
        if name != "UncertaintyAnalysis":
            return [TokenLogprob(content, 0.0, ((content, 0.0),))]
        p = p_true[len(seen)]
        seen.append(1)
        start = content.index('"sufficient": ') + len('"sufficient": ')
        said = "true" if content[start:].startswith("true") else "false"
        top = (("true", L(p)), ("false", L(1 - p)))
        return [
            TokenLogprob(content[:start], 0.0),
            TokenLogprob(said, L(p if said == "true" else 1 - p), top),
            TokenLogprob(content[start + len(said) :], 0.0),
        ]

    return tokens


@pytest.mark.parametrize(
    ("p_true", "rounds_run", "stop"),
    [
        ([0.79, 0.81], 2, "evidence sufficient"),  # just below 0.8 searches on; just above stops
        ([0.81], 1, "evidence sufficient"),
        ([0.79, 0.79], 2, "2 rounds done"),  # the model said yes both times, never sure enough
        (None, 1, "evidence sufficient"),  # no logprobs: the model's own yes
    ],
)
async def test_video_rlm_stops_when_the_server_is_sure_enough_that_the_evidence_suffices(
    counter_video: Path, tmp_path: Path, p_true: list[float] | None, rounds_run: int, stop: str
) -> None:
    steps: list[int] = []

    def finding(name: str, text: str, schema: dict[str, Any]) -> Any:
        """Each worker's first step files one new cell, so every round has new evidence to weigh."""
        if name == "WorkerStep" and "(nothing yet)" in text.split("Evidence already collected")[-1]:
            steps.append(1)
            return step("ADD_TO_SCRATCHPAD", cells=[5 * len(steps)], summary="a number")
        return default_reply(name, text, schema)  # the uncertainty analysis always says sufficient

    config = RunConfig.of(cell_px=64, workers=1, rounds=2, confidence=0.8)
    server = sufficient_logprobs(p_true) if p_true is not None else None
    out, _, state = await scored_run(
        counter_video, tmp_path, finding, server, config, "What number is shown?", ["one", "two"]
    )
    checks = state["checks"]
    assert len(checks) == rounds_run and out["stop_reason"] == stop
    expected = [None] * rounds_run if p_true is None else p_true[:rounds_run]
    assert [c["p_sufficient"] for c in checks] == expected
    assert [c["sufficient"] for c in checks] == [p is None or p >= 0.8 for p in expected]
