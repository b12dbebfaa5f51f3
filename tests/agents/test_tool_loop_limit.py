"""The tool loop's step limit has one meaning in both of its thinkers: a limit of N is N tool calls, then the answer.

VideoARM's controller and VideoSeek's planner run the loop's shared step (``tool_loop.think``), as
the papers' loops do (VideoARM's Algorithm 1, VideoSeek's 20 turns). Driven by a scripted thinker
on the generated counter video: one that never answers makes exactly N tool calls and the answer
is then forced, the last step's prompt saying it is step N of N; one that answers before the
limit stops there, on its own decision.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_helpers import default_reply, make_context
from loop_helpers import LOOPS, Loop, counter_question
from videoatlas.runtime.config import RunConfig

pytestmark = pytest.mark.unit


def script(loop: Loop, answer_at: int | None = None) -> Any:
    """A scripted thinker making ``loop.call`` at every step; at step ``answer_at`` (None: never) it answers."""
    steps = 0

    def reply(name: str, text: str, schema: dict[str, Any]) -> Any:
        nonlocal steps
        if name == loop.thinker:
            steps += 1
            call = {"tool": "answer"} if steps == answer_at else loop.call
            return {loop.said: f"step {steps}", "call": call}
        if name == loop.tool:
            return loop.report
        return default_reply(name, text, schema)

    return reply


async def run(agent: str, video: Path, tmp: Path, limit: int, answer_at: int | None = None) -> tuple[Any, Any]:
    loop = LOOPS[agent]
    config = RunConfig.of(agent=agent, **{loop.limit: limit}, **loop.settings)
    ctx, chat, source = make_context(video, tmp, script(loop, answer_at), config)
    return await counter_question(agent, ctx, source), chat


@pytest.mark.parametrize(
    ("agent", "limit", "stop"),
    [
        ("videoarm", 1, "1 tool step done: answer forced"),
        ("videoarm", 3, "3 tool steps done: answer forced"),
        ("videoseek", 1, "1 turn done: answer forced"),
        ("videoseek", 3, "3 turns done: answer forced"),
    ],
)
async def test_a_limit_of_n_is_n_tool_calls_then_the_answer(
    counter_video: Path, tmp_path: Path, agent: str, limit: int, stop: str
) -> None:
    loop = LOOPS[agent]
    out, chat = await run(agent, counter_video, tmp_path, limit)
    names = [name for name, _ in chat.seen]
    assert names == [loop.thinker, loop.tool] * limit + ["FinalDecision"]
    assert len(out[loop.taken]) == out["round"] == limit
    assert out["stop_reason"] == stop
    # The last step asked was step N of N, and it called a tool: the limit's step is a tool step.
    steps = [text for name, text in chat.seen if name == loop.thinker]
    assert [f"{loop.at} {n} of {limit}" in text for n, text in enumerate(steps, 1)] == [True] * limit
    assert out["answer"] in ("4", "7")


@pytest.mark.parametrize("agent", sorted(LOOPS))
async def test_a_thinker_answering_before_the_limit_stops_there(
    counter_video: Path, tmp_path: Path, agent: str
) -> None:
    loop = LOOPS[agent]
    out, chat = await run(agent, counter_video, tmp_path, 3, answer_at=2)
    names = [name for name, _ in chat.seen]
    assert names == [loop.thinker, loop.tool, loop.thinker, "FinalDecision"]
    assert len(out[loop.taken]) == out["round"] == 1
    assert out["stop_reason"] == f"the {loop.who} answered"
