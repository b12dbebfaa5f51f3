"""The final answer, from the trajectory and the frames the tools flagged (text only, like every planner turn)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.decision import decide_on_evidence
from videoatlas.agents.videoseek.look import heard_so_far
from videoatlas.agents.videoseek.settings import seek
from videoatlas.agents.videoseek.state import SeekState, Turn, anchor_of
from videoatlas.agents.videoseek.views import PLANNER_SYSTEM, evidence_block, history, subtitles_text
from videoatlas.environment.timefmt import format_ts
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Where
from videoatlas.state.models import Evidence, FrameRef


def flagged_evidence(turns: list[Turn], ctx: AgentContext, short_px: int) -> list[Evidence]:
    """The frames skim and focus flagged, in time order, as evidence items (what answers may cite)."""
    items: dict[float, Evidence] = {}
    for turn in turns:
        for k, (t, note) in enumerate(zip(turn.relevant, turn.notes, strict=True)):
            key = round(t, 3)
            if key in items:
                continue
            px = ctx.atlas.zoom_box if turn.tool == "focus" else short_px
            items[key] = Evidence(
                id=f"t{turn.index}-{k}",
                time=t,
                start=turn.start if turn.start is not None else t,
                end=turn.end if turn.end is not None else t,
                description=note or f"flagged by {turn.tool} for: {turn.query}",
                confidence=0.9 if turn.tool == "focus" else 0.6,
                frame=FrameRef(video=ctx.atlas.source.identity, time=t, px=px),
                round=turn.index,
                worker=turn.tool,
            )
    return [items[k] for k in sorted(items)]


async def answer(state: SeekState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Judge each choice against what was reported and answer; a failed reply is recorded, never guessed.

    A question with a time relation is told the anchor's time, and the answer's cited times are
    checked against it in the reasoning (:func:`videoatlas.agents.relation.time_check`).
    """
    ctx = runtime.context
    turns = state.get("turns") or []
    settings = seek(ctx)
    evidence = flagged_evidence(turns, ctx, settings.short_px)
    duration = ctx.atlas.duration
    heard = await heard_so_far(ctx, turns, settings, Where("answer", len(turns)))
    anchor = anchor_of(turns)
    values = {
        "duration": format_ts(duration, 0),
        "history": history(turns),
        "evidence": evidence_block(evidence),
        "subtitles": subtitles_text(
            heard.subtitles, settings.subtitle_chars, " ".join([state["question"], *state["choices"]])
        ),
    }
    return await decide_on_evidence(
        ctx,
        state,
        evidence,
        system=PLANNER_SYSTEM,
        images=[],
        values=values,
        stop="the planner answered",
        thinker="planner",
        extra={"round": len(turns)},
        anchor=anchor,
        heard=heard,
    )
