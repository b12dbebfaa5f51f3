"""The planner's turn: from the question and the trajectory alone (no pixels), a thought and one tool call.

On its first turn the planner also says the question's time relation ("right after the banner"): its
anchor is then searched first (each tool is asked which frame shows it), and the turn right after a
tool saw it looks inside the window the relation names beside it (the call's span is held to it).
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from videoatlas.agents.relation import Anchor, Relation, RelationStep, inside, relation_note, window
from videoatlas.agents.tool_loop import choose_tool, next_step
from videoatlas.agents.videoseek.look import heard_so_far
from videoatlas.agents.videoseek.schemas import turn_schema
from videoatlas.agents.videoseek.settings import VideoSeekSettings, seek
from videoatlas.agents.videoseek.state import SeekState, anchor_of
from videoatlas.agents.videoseek.views import PLANNER_SYSTEM, history, subtitles_text
from videoatlas.environment.geometry import Interval
from videoatlas.environment.timefmt import format_ts
from videoatlas.runtime.calls import budget_exhausted, choices_block, emit, with_heard
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Where

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
    heard = await heard_so_far(ctx, turns, settings, Where("plan", turn_no))
    relation = state.get("relation")
    anchor = anchor_of(turns)
    beside = anchor_window(relation, anchor, duration, settings) if anchor is not None else None
    # The turn right after a tool saw the anchor looks inside its window.
    held = beside if beside is not None and turns[-1].anchor is not None else None
    values = {
        "question": state["question"],
        "choices": choices_block(state["choices"]),
        "duration": format_ts(duration, 0),
        "seconds": f"{duration:.1f}",
        "subtitles": subtitles_text(
            heard.subtitles, settings.subtitle_chars, " ".join([state["question"], *state["choices"]])
        ),
        "overview_frames": settings.overview_frames,
        "skim_frames": settings.skim_frames,
        "skim_min": f"{settings.span_s:g}",
        "focus_max": f"{settings.span_s:g}",
        "history": history(turns),
        "turn": turn_no,
        "turns": settings.turns,
        "relation": relation_note(ctx.prompts, relation, anchor, beside),
    }
    emit("plan", turn=turn_no)
    # Without a usable plan: look at the whole video first, and once that was done, answer.
    looked = any(t.tool == "overview" for t in turns)
    instead = (
        ({"tool": "answer"}, "answer from what was reported")
        if looked
        else ({"tool": "overview"}, "an overview of the whole video")
    )
    tools = TOOLS if held is None else tuple(t for t in TOOLS if t != "overview")
    step_relation = RelationStep(asked=relation is None, held=held, hold=held_to)
    call, thought, update = await choose_tool(
        ctx,
        turn_schema(tools, duration, relation=step_relation.asked, window=step_relation.window),
        [],
        values,
        node="plan",
        template="plan",
        system=PLANNER_SYSTEM,
        thinker="planner",
        turn=turn_no,
        said="thought",
        instead=instead if held is None else (skim_of(held), "a skim of the window beside the anchor"),
        relation=step_relation,
    )
    emit("planned", turn=turn_no, tool=call["tool"], thought=thought)
    return next_step(call, with_heard(update, heard), "look", "planner")


def anchor_window(
    relation: Relation | None, anchor: Anchor, duration: float, settings: VideoSeekSettings
) -> Interval | None:
    """The window the relation names beside the anchor: one overview spacing long, at least one skim.

    Overview frames lie that far apart, so what comes right after (or just before) the anchor is
    shown within it.
    """
    return window(relation, anchor, duration, max(settings.span_s, duration / settings.overview_frames))


def skim_of(held: Interval) -> dict[str, Any]:
    """A skim of the whole window (the turn's call when its reply cannot be used)."""
    return {"tool": "skim", "query": "", "start": held.start, "end": held.end}


def held_to(call: dict[str, Any], held: Interval) -> tuple[dict[str, Any], str]:
    """A skim or focus call with its span held inside ``held``, and a note on what changed ("" if nothing did)."""
    if call["tool"] not in ("skim", "focus"):
        return call, ""
    start, end = float(call["start"]), float(call["end"])
    a, b = inside(start, end, held)
    if abs(a - start) < 1e-6 and abs(b - end) < 1e-6:
        return call, ""
    note = f"{call['tool']} span {start:g}-{end:g} s held to {a:.1f}-{b:.1f} s (the window beside the anchor)"
    return {**call, "start": a, "end": b}, note
