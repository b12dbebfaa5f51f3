"""The planner's turn: from the question and the trajectory alone (no pixels), a thought and one tool call."""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from videoatlas.agents.tool_loop import choose_tool, next_step
from videoatlas.agents.videoseek.look import listened, turn_span
from videoatlas.agents.videoseek.schemas import turn_schema
from videoatlas.agents.videoseek.settings import seek
from videoatlas.agents.videoseek.state import SeekState
from videoatlas.agents.videoseek.views import PLANNER_SYSTEM, history, subtitles_text
from videoatlas.environment.timefmt import format_ts
from videoatlas.runtime.calls import budget_exhausted, choices_block, emit, hear, said, with_heard
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Heard, Where

TOOLS = ("overview", "skim", "focus", "answer")


async def plan(state: SeekState, runtime: Runtime[AgentContext]) -> Command[Literal["look", "answer"]]:
    """Ask the planner for the next tool call; at the turn limit or out of budget, go to the answer."""
    ctx = runtime.context
    settings = seek(ctx)
    turns = state.get("turns") or []
    turn_no = len(turns) + 1
    if turn_no > settings.turns:
        return Command(goto="answer", update={"stop_reason": f"{settings.turns} turns done"})
    spent = budget_exhausted(state["cost"], ctx.config.call_budget, ctx.config.token_budget)
    if spent:
        return Command(goto="answer", update={"stop_reason": spent})
    duration = ctx.atlas.duration
    # What the tools listened to so far (read again from the speech track's cache: nothing is transcribed twice).
    spans = [span for t in turns for span in listened(t.tool, turn_span(t, duration), settings)]
    heard = await hear(ctx, spans, Where("plan", turn_no)) if spans else Heard(said(ctx))
    values = {
        "question": state["question"],
        "choices": choices_block(state["choices"]),
        "duration": format_ts(duration, 0),
        "seconds": f"{duration:.1f}",
        "subtitles": subtitles_text(heard.subtitles, settings.subtitle_chars),
        "overview_frames": settings.overview_frames,
        "skim_frames": settings.skim_frames,
        "skim_min": f"{settings.span_s:g}",
        "focus_max": f"{settings.span_s:g}",
        "history": history(turns),
        "turn": turn_no,
        "turns": settings.turns,
    }
    emit("plan", turn=turn_no)
    # Without a usable plan: look at the whole video first, and once that was done, answer.
    looked = any(t.tool == "overview" for t in turns)
    instead = (
        ({"tool": "answer"}, "answer from what was reported")
        if looked
        else ({"tool": "overview"}, "an overview of the whole video")
    )
    call, thought, update = await choose_tool(
        ctx,
        turn_schema(TOOLS, duration),
        [],
        values,
        node="plan",
        template="plan",
        system=PLANNER_SYSTEM,
        thinker="planner",
        turn=turn_no,
        said="thought",
        instead=instead,
    )
    emit("planned", turn=turn_no, tool=call["tool"], thought=thought)
    return next_step(call, with_heard(update, heard), "look", "planner")
