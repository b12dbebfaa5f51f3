"""Stopping on the server's confidence in VideoARM and VideoSeek (``--confidence``, llm/logprobs.settled); EEA's in
``test_eea_scripted.py``, Video-RLM's in ``test_answer_probabilities.py``.

A scripted model whose log-probabilities are chosen here: where a thinker's reply names its tool (``call.tool``),
the alternative ``answer`` has the probability each case gives. An answer below the threshold is held back and
the step is asked once more without answering on offer; one at or above it stands; a tool step whose
P(answer) reaches a threshold under 0.5 answers; a server without logprobs leaves the model's own choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agent_helpers import action_logprobs, default_reply, make_context
from loop_helpers import LOOPS, counter_question
from videoatlas.agents.registry import get_agent
from videoatlas.runtime.config import RunConfig, StopsOnConfidence

pytestmark = pytest.mark.unit


async def loop_run(
    agent: str, video: Path, tmp: Path, answers: Sequence[bool], p_answer: Sequence[float] | None, confidence: float
) -> tuple[dict[str, Any], Any]:
    """``agent`` whose thinker answers at its n-th reply when ``answers[n]`` (else it calls its tool)."""
    loop = LOOPS[agent]
    replies = iter(answers)

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == loop.thinker:
            return {loop.said: "thinking", "call": {"tool": "answer"} if next(replies) else loop.call}
        return loop.report if name == loop.tool else default_reply(name, text, schema)

    config = RunConfig.of(agent=agent, confidence=confidence, **{loop.limit: 4}, **loop.settings)
    ctx, chat, source = make_context(video, tmp, script, config)
    if p_answer is not None:
        chat.logprobs = action_logprobs(loop.thinker, "tool", p_answer, loop.call["tool"])
    return await counter_question(agent, ctx, source), chat


def offered_tools(response_format: dict[str, Any]) -> set[str]:
    """The tools a thinker's reply schema offers (each variant's ``tool`` constant)."""
    found = set()
    for variant in response_format["json_schema"]["schema"]["$defs"].values():
        tool = variant.get("properties", {}).get("tool", {})
        found |= {tool["const"]} if "const" in tool else set(tool.get("enum", []))
    return found


@pytest.mark.parametrize("agent", sorted(LOOPS))
async def test_an_answer_just_below_the_threshold_is_held_back_and_one_just_above_stands(
    counter_video: Path, tmp_path: Path, agent: str
) -> None:
    loop = LOOPS[agent]
    # Step 1 calls its tool; step 2 answers at 0.79 (held back: asked again, it calls its tool); step 3 answers at 0.81.
    out, chat = await loop_run(agent, counter_video, tmp_path, [False, True, False, True], [0.1, 0.79, 0.81], 0.8)
    names = [name for name, _ in chat.seen]
    thinker = loop.thinker
    assert names == [thinker, loop.tool, thinker, thinker, loop.tool, thinker, "FinalDecision"]
    asks = [i for i, name in enumerate(names) if name == thinker]
    # The step asked again offers every tool but the answer, says why, and needs no logprobs (it cannot answer).
    assert [("answer" in offered_tools(chat.formats[i])) for i in asks] == [True, True, False, True]
    assert [chat.asked_logprobs[i] for i in asks] == [True, True, False, True]
    again = chat.seen[asks[2]][1]
    assert "you were only 0.79 sure" in again and "0.8 or above" in again
    assert "you were only" not in chat.seen[asks[1]][1]
    assert out["stop_reason"] == f"the {loop.who} answered"
    assert out["round"] == 2  # two tool steps ran
    assert out["cost"].calls == len(names)  # the step asked again is counted


@pytest.mark.parametrize("agent", sorted(LOOPS))
@pytest.mark.parametrize(("p_answer", "steps"), [([0.81], 0), (None, 0)])
async def test_a_sure_answer_and_an_answer_without_logprobs_stand(
    counter_video: Path, tmp_path: Path, agent: str, p_answer: list[float] | None, steps: int
) -> None:
    loop = LOOPS[agent]
    out, chat = await loop_run(agent, counter_video, tmp_path, [True], p_answer, 0.8)
    assert [name for name, _ in chat.seen] == [loop.thinker, "FinalDecision"]
    assert out["stop_reason"] == f"the {loop.who} answered" and out["round"] == steps


@pytest.mark.parametrize("agent", sorted(LOOPS))
async def test_under_a_low_threshold_a_tool_step_leaning_to_answer_answers(
    counter_video: Path, tmp_path: Path, agent: str
) -> None:
    loop = LOOPS[agent]
    # Step 1 calls its tool at P(answer) 0.25 (below 0.3: the tool runs); step 2 calls it at 0.35: the answer follows.
    out, chat = await loop_run(agent, counter_video, tmp_path, [False, False, False], [0.25, 0.35], 0.3)
    assert [name for name, _ in chat.seen] == [loop.thinker, loop.tool, loop.thinker, "FinalDecision"]
    assert out["stop_reason"] == f"the {loop.who} answered: P(answer) 0.35 reached --confidence 0.3"
    assert out["round"] == 1


def test_every_searching_agent_shares_one_confidence_setting_with_its_default() -> None:
    for agent in ("video-rlm", "eea", "videoarm", "videoseek"):
        settings = get_agent(agent).settings
        # One flag, one help: every agent's --confidence is the shared setting, with its description.
        assert issubclass(settings, StopsOnConfidence), agent
        assert settings().confidence == 0.8, agent
        with pytest.raises(ValueError):
            settings(confidence=0.0)
    assert RunConfig.of(agent="videoseek", confidence=0.3).settings["confidence"] == 0.3


def test_an_answer_held_back_has_a_progress_line() -> None:
    from videoatlas.agents.registry import describe_event

    held = {"event": "answer_held", "step": 2, "p_answer": 0.79, "threshold": 0.8}
    assert describe_event(held) == "step 2: answer held back (P(answer) 0.79 below 0.8); asking again"
