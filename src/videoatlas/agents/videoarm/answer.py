"""The final answer, from the memory and the current focus's mosaics; each memory item is citable evidence."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.decision import decide_on_evidence
from videoatlas.agents.videoarm.control import anchor_of, focus_images
from videoatlas.agents.videoarm.render import time_of
from videoatlas.agents.videoarm.state import ArmState, Entry
from videoatlas.agents.videoarm.views import (
    CONTROLLER_SYSTEM,
    evidence_block,
    heard_line,
    memory_text,
    ranges_text,
    seen_text,
)
from videoatlas.environment.timefmt import format_ts
from videoatlas.runtime.context import AgentContext
from videoatlas.state.models import Evidence, FrameRef


def memory_evidence(memory: list[Entry], ctx: AgentContext) -> list[Evidence]:
    """What the memory holds, as evidence items in step order: a caption, an answer, each stretch of speech.

    A caption or an answer is placed at the frames its report named as showing what the question asks
    about (the first named is its frame), else over the stretch its tool looked at (its middle frame).
    A step whose tool named the frame showing the time relation's anchor adds that frame as an item of its own,
    and the caption or answer is placed at the other frames it named (at the anchor's only if it named no other).
    """
    video = ctx.atlas.source.identity
    items: list[Evidence] = []

    def add(entry: Entry, start: float, end: float, text: str, confidence: float, frame: int | None) -> None:
        t = time_of(ctx.atlas, frame) if frame is not None else start
        items.append(
            Evidence(
                id=f"s{entry.step}-{len(items)}",
                time=t,
                start=start,
                end=end,
                description=text,
                confidence=confidence,
                frame=FrameRef(video=video, time=t, px=256),
                place=f"step {entry.step}, {entry.tool}",
                where={"step": entry.step, "tool": entry.tool},
            )
        )

    for entry in memory:
        if entry.tool == "audio_transcriber":
            for h in entry.heard:
                add(entry, h.start, h.end, f"step {entry.step}, heard {heard_line(h.start, h.end, h.text)}", 0.8, None)
            continue
        confidence = 0.6 if entry.tool == "scene_snapper" else entry.confidence if entry.confidence is not None else 0.5
        frame: int | None
        if entry.seen:  # placed where the report says it saw it, not over all the tool looked at
            # A report asked for the anchor may name its frame among these too: it has an item of its own.
            seen = [s for s in entry.seen if s[0] != entry.anchor] or entry.seen
            times = [t for _, t in seen]
            where, frame = f", seen in {seen_text(seen)}", seen[0][0]
            start, end = min(times), max(times)
        else:  # the ranges as the call listed them, in any order
            spans = entry.ranges or [(0.0, ctx.atlas.duration)]
            start, end = min(a for a, _ in spans), max(b for _, b in spans)
            where, frame = (
                f" on {ranges_text(entry.ranges)}",
                entry.frames[len(entry.frames) // 2] if entry.frames else None,
            )
        add(entry, start, end, f"step {entry.step}, {entry.tool}{where}: {entry.output}", confidence, frame)
        if entry.anchor is not None:
            t = time_of(ctx.atlas, entry.anchor)
            add(
                entry,
                t,
                t,
                f"step {entry.step}, {entry.tool}: frame {entry.anchor} shows the anchor",
                0.8,
                entry.anchor,
            )
    return items


async def answer(state: ArmState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Judge each choice against the memory and answer; a failed reply is recorded, never guessed.

    A question with a time relation is told the anchor's time, and the answer's cited times are
    checked against it in the reasoning (:func:`videoatlas.agents.relation.time_check`).
    """
    ctx = runtime.context
    memory = state.get("memory") or []
    evidence = memory_evidence(memory, ctx)
    anchor = anchor_of(memory, ctx.atlas)
    values = {
        "duration": format_ts(ctx.atlas.duration, 0),
        "memory": memory_text(memory),
        "evidence": evidence_block(evidence),
    }
    decided = await decide_on_evidence(
        ctx,
        state,
        evidence,
        system=CONTROLLER_SYSTEM,
        images=await focus_images(state, ctx),
        values=values,
        stop="the controller answered",
        thinker="controller",
        extra={"round": len(memory)},
        anchor=anchor,
    )
    return decided
