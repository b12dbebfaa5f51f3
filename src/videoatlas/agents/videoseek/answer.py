"""The final answer from the trajectory, the frames the tools flagged and what is said (text only, as every turn).

The frames flagged and the lines of speech (or subtitles) quoted are the evidence an answer may cite:
the frames labelled first, the lines after them. A line cited joins the run's evidence beside the
frames, so an answer resting on what was said is grounded in it, as one resting on a frame is.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.decision import decide_on_evidence
from videoatlas.agents.videoseek.look import heard_so_far
from videoatlas.agents.videoseek.settings import seek
from videoatlas.agents.videoseek.state import SeekState, Turn, anchor_of
from videoatlas.agents.videoseek.views import PLANNER_SYSTEM, evidence_block, history, lines_text, quoted_lines
from videoatlas.environment.subtitles import SubtitleLine
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
                place=f"turn {turn.index}, {turn.tool}",
                where={"turn": turn.index, "tool": turn.tool},
            )
    return [items[k] for k in sorted(items)]


def said_evidence(lines: list[SubtitleLine], ctx: AgentContext, short_px: int) -> list[Evidence]:
    """The quoted lines as evidence items: each the stretch it is said in, with the frame at its middle."""
    items = []
    for k, line in enumerate(lines):
        t = (line.start + line.end) / 2
        items.append(
            Evidence(
                id=f"said-{k}-{line.start:.1f}",  # two lines may start together (a subtitle file's overlaps)
                time=t,
                start=line.start,
                end=line.end,
                description=f'said: "{line.text}"',
                confidence=0.8,
                subtitle=line.text,
                frame=FrameRef(video=ctx.atlas.source.identity, time=t, px=short_px),
                place="said",
                where={"said": k},
            )
        )
    return items


async def answer(state: SeekState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Judge each choice against what the tools reported and what is said, and answer; never a guess.

    A failed reply is recorded as the run's result. The run's evidence is the frames flagged and the
    lines the answer cited. A question with a time relation is told the anchor's time, and the cited
    times are checked against it in the reasoning (:func:`videoatlas.agents.relation.time_check`).
    """
    ctx = runtime.context
    turns = state.get("turns") or []
    settings = seek(ctx)
    frames = flagged_evidence(turns, ctx, settings.short_px)
    duration = ctx.atlas.duration
    heard = await heard_so_far(ctx, turns, settings, Where("answer", len(turns)))
    about = " ".join([state["question"], *state["choices"]])
    lines, left = quoted_lines(heard.subtitles, settings.subtitle_chars, about, labels_from=len(frames))
    said = said_evidence(lines, ctx, settings.short_px)
    values = {
        "duration": format_ts(duration, 0),
        "history": history(turns),
        "evidence": evidence_block(frames),
        "subtitles": lines_text(lines, left, labels_from=len(frames)),
    }
    result = await decide_on_evidence(
        ctx,
        state,
        [*frames, *said],
        system=PLANNER_SYSTEM,
        images=[],
        values=values,
        stop="the planner answered",
        thinker="planner",
        extra={"round": len(turns)},
        anchor=anchor_of(turns),
        heard=heard,
        record_evidence=False,
    )
    cited = set(result.get("cited") or [])
    return {**result, "evidence": [*frames, *(e for e in said if e.id in cited)]}
