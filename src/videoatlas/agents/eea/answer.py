"""The answer, from the frames in memory (shown as labelled pages) and how the search went.

The pages show each frame as large as the round that looked at it did (``frame_px`` on its short side),
not at the atlas's cell size: a badge read on a round's frame was too small to read again on a
320 px tile, and the answer counted nothing where the search had found it. The policy's pages
between rounds stay at the cell size (they choose where to look next; the answer reads).
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas import limits
from videoatlas.agents.decision import decide_on_evidence
from videoatlas.agents.eea.select import memory_images
from videoatlas.agents.eea.settings import EEASettings, eea
from videoatlas.agents.eea.state import EEAState
from videoatlas.agents.eea.views import SYSTEM, rounds_block
from videoatlas.environment.geometry import Interval
from videoatlas.environment.render import evidence_label
from videoatlas.environment.timefmt import format_moment, format_ts
from videoatlas.runtime.calls import hear, said, speech_lines
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Heard, Where
from videoatlas.state.models import Evidence, FrameRef


def seen_px(ctx: AgentContext, settings: EEASettings) -> int:
    """A frame's long side when its short side is ``frame_px``, as each round's frames were shown.

    At most a cell's largest size. The answer is shown the memory at this size, so that what a round read
    there can be read again.
    """
    info = ctx.atlas.source.info
    long_side, short_side = max(info.width, info.height), min(info.width, info.height)
    ratio = long_side / short_side if short_side > 0 else 1.0
    return min(limits.CELL_PX_MAX, max(limits.CELL_PX_MIN, round(settings.frame_px * ratio)))


def memory_evidence(state: EEAState, ctx: AgentContext, px: int) -> list[Evidence]:
    """The memory frames as evidence items, in time order (each with the child segment around it), shown ``px`` wide."""
    items = []
    rounds = {r.index: r for r in state.get("rounds") or []}
    for n, m in enumerate(state.get("memory") or []):
        seen_in = rounds.get(m.round)
        items.append(
            Evidence(
                id=f"m{n}-{round(m.time * 1000)}",
                time=m.time,
                start=m.time,
                end=m.time,
                description=f"frame looked at in round {m.round}, kept with reward {m.reward:.2f}"
                + (f" (stretch {seen_in.segment} opened)" if seen_in else ""),
                confidence=m.reward,
                frame=FrameRef(video=ctx.atlas.source.identity, time=m.time, px=px),
                place=f"memory frame {n}, round {m.round}",
                where={"memory": n, "round": m.round},
            )
        )
    return items


async def answer(state: EEAState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Judge each choice against the memory frames and answer; a failed reply is recorded, never guessed.

    A question with a time relation is told the anchor's time, and the answer's cited times are
    checked against it in the reasoning (:func:`videoatlas.agents.relation.time_check`).
    """
    ctx = runtime.context
    px = seen_px(ctx, eea(ctx))
    evidence = memory_evidence(state, ctx, px)
    rounds = state.get("rounds") or []
    opened = [Interval(s.start, s.end) for s in state.get("segments") or [] if s.expanded]
    heard = await hear(ctx, opened, Where("answer", len(rounds))) if opened else Heard(said(ctx))
    anchor = state.get("relation_anchor")
    values = {
        "duration": format_ts(ctx.atlas.duration, 0),
        "evidence": "\n".join(f"[{evidence_label(i)}] {format_moment(e.time)}" for i, e in enumerate(evidence))
        or "(none)",
        "history": rounds_block(rounds, state.get("segments") or []),
        "speech": speech_lines(
            heard.subtitles, opened or [Interval(0.0, ctx.atlas.duration)], state["question"], state["choices"]
        ),
    }
    return await decide_on_evidence(
        ctx,
        state,
        evidence,
        system=SYSTEM,
        images=await memory_images(ctx, [e.time for e in evidence], px),
        values=values,
        stop="the policy answered",
        thinker="searcher",
        extra={"round": len(rounds)},
        anchor=anchor,
        heard=heard,
    )
