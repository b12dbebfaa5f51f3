"""The planner's turn: from the question and the trajectory alone (no pixels), a thought and one tool call.

On its first turn the planner also says the question's time relation ("right after the banner"): its
anchor is then searched first (each tool is asked which frame shows it), and the turn right after a
tool saw it looks inside the window the relation names beside it (the call's span is held to it).
The turn itself is the tool loop's (:func:`~videoatlas.agents.tool_loop.think`): after ``turns`` turns,
one tool each, or out of budget, the answer is forced without asking.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from videoatlas.agents.relation import inside
from videoatlas.agents.tool_loop import Ask, Step, Thinker, think
from videoatlas.agents.videoseek.look import heard_so_far
from videoatlas.agents.videoseek.schemas import turn_schema
from videoatlas.agents.videoseek.settings import VideoSeekSettings, seek
from videoatlas.agents.videoseek.state import SeekState, anchor_of
from videoatlas.agents.videoseek.views import PLANNER_SYSTEM, history, subtitles_text
from videoatlas.environment.geometry import Interval
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Where

TOOLS = ("overview", "skim", "focus", "answer")


async def plan(state: SeekState, runtime: Runtime[AgentContext]) -> Command[Literal["look", "answer"]]:
    """Ask the planner for the next tool call; after ``turns`` turns or out of budget, go to the answer."""
    ctx = runtime.context
    settings = seek(ctx)
    turns = state.get("turns") or []
    return await think(
        PLANNER,
        state,
        ctx,
        taken=turns,
        anchor=anchor_of(turns),
        limit=settings.turns,
        window_s=window_s(ctx.atlas.duration, settings),
        confidence=settings.confidence,
        ask_for=partial(turn_ask, state, ctx, settings),
    )


async def turn_ask(state: SeekState, ctx: AgentContext, settings: VideoSeekSettings, step: Step) -> Ask:
    """The planner's request at ``step``: what is said so far, the trajectory, the tools on offer, the fallback call."""
    turns = state.get("turns") or []
    heard = await heard_so_far(ctx, turns, settings, Where("plan", step.number))
    values = {
        "subtitles": subtitles_text(
            heard.subtitles, settings.subtitle_chars, " ".join([state["question"], *state["choices"]])
        ),
        "overview_frames": settings.overview_frames,
        "skim_frames": settings.skim_frames,
        "skim_min": f"{settings.span_s:g}",
        "focus_max": f"{settings.span_s:g}",
        "history": history(turns),
        "turn": step.number,
        "turns": step.limit,
    }
    held = step.relation.held
    # Without a usable plan: look at the whole video first, and once that was done, answer; the window when one holds.
    # Asked again after an answer held back: a skim of the whole video (or of the window) instead of answering.
    looked = any(t.tool == "overview" for t in turns)
    instead = (
        ({"tool": "answer"}, "answer from what was reported")
        if looked
        else ({"tool": "overview"}, "an overview of the whole video")
    )
    if looked and step.unsure is not None:
        instead = (skim_of(Interval(0.0, ctx.atlas.duration)), "a skim of the whole video")
    if held is not None:
        instead = (skim_of(held), "a skim of the window beside the anchor")
    tools = step.offered([t for t in TOOLS if not (t == "overview" and held is not None)])
    schema = turn_schema(tools, ctx.atlas.duration, relation=step.relation.asked, window=step.relation.window)
    return Ask(schema, [], values, instead, tools, heard)


def window_s(duration: float, settings: VideoSeekSettings) -> float:
    """How long the window beside the anchor is: one overview spacing, at least one skim.

    Overview frames lie that far apart, so what comes right after (or just before) the anchor is
    shown within it.
    """
    return max(settings.span_s, duration / settings.overview_frames)


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


PLANNER = Thinker(
    name="planner",
    node="plan",
    template="plan",
    system=PLANNER_SYSTEM,
    said="thought",
    tool="look",
    unit="turn",
    events=("plan", "planned"),
    hold=held_to,
)
"""VideoSeek's thinker: the planner, whose calls ``look`` runs."""
