"""The uniform-sampling baseline: N evenly spaced frames on contact sheets, one call, one answer."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.decision import DecisionCall, decide_final
from videoatlas.agents.uniform.settings import uniform
from videoatlas.agents.uniform.state import UniformState
from videoatlas.environment.atlas import GridView
from videoatlas.environment.geometry import Interval
from videoatlas.environment.timefmt import format_ts
from videoatlas.runtime.calls import as_image, decision_values, hear, speech_lines, with_heard
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Where
from videoatlas.state.models import Evidence, FrameRef

_CITATION = re.compile(r"^\s*\[?\s*(\d+)\s*/\s*(\d+)\s*\]?\s*$")


def sheet_intervals(duration: float, frames: int, k: int) -> list[Interval]:
    """The stretches of video each sheet covers: ``frames`` rounded up to whole ``k x k`` sheets."""
    sheets = max(1, math.ceil(frames / (k * k)))
    return [Interval(duration * i / sheets, duration * (i + 1) / sheets) for i in range(sheets)]


async def answer_uniform(state: UniformState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Render the sheets, ask once, and keep the cited frames as evidence; a failed reply is never guessed."""
    ctx = runtime.context
    k = ctx.config.k
    spans = sheet_intervals(ctx.atlas.duration, uniform(ctx).frames, k)
    views = [await ctx.atlas.agrid(())] if len(spans) == 1 else [await ctx.atlas.agrid_over(s) for s in spans]
    images = [as_image(view.image, f"uniform sheet {n + 1}") for n, view in enumerate(views)]
    cells = [(f"{n + 1}/{cell.index}", cell.interval) for n, view in enumerate(views) for cell in view.grid.cells]
    heard = await hear(ctx, [iv for _, iv in cells], Where("answer_uniform"))
    choices = state["choices"]
    values = {
        **decision_values(ctx.prompts, state["question"], choices),
        "frames": len(spans) * k * k,
        "sheets": len(spans),
        "k": k,
        "duration": format_ts(ctx.atlas.duration, 0),
        "subtitles": speech_lines(heard.subtitles, [iv for _, iv in cells], state["question"], choices),
    }
    call = DecisionCall(
        node="answer_uniform",
        template="answer",
        system="system",
        images=images,
        values=values,
        choices=choices,
        labels=[f"{n + 1}/{cell.index}" for n, view in enumerate(views) for cell in view.grid.cells],
        stop="single call",
        step="answer",
        thinker="answerer",
        extra={"round": 0},
    )
    decided = await decide_final(ctx, call, functools.partial(_cited_frames, ctx, views), [])
    return with_heard(decided, heard)


def _cited_frames(
    ctx: AgentContext, views: Sequence[GridView], cited: Sequence[str]
) -> tuple[list[str], list[Evidence] | None]:
    """The sampled frames a reply cites (``sheet/cell``), each once, as evidence items."""
    evidence: list[Evidence] = []
    for label in cited:
        match = _CITATION.match(label)
        if not match:
            continue
        sheet, cell = int(match.group(1)) - 1, int(match.group(2))
        if not (0 <= sheet < len(views) and 0 <= cell < len(views[sheet].grid.cells)):
            continue
        interval = views[sheet].grid.cells[cell].interval
        # The frame the cell showed (a keyframe anywhere inside it, else the one at its middle): what was seen there.
        shown = views[sheet].image.frames[cell]
        t = float(shown["time"]) if shown.get("method") != "unavailable" else interval.mid
        evidence.append(
            Evidence(
                id=f"u-{sheet + 1}-{cell}",
                time=t,
                start=interval.start,
                end=interval.end,
                description=f"sampled frame cited by the answer (sheet {sheet + 1}, cell {cell})",
                confidence=1.0,
                frame=FrameRef(video=ctx.atlas.source.identity, time=t, px=ctx.config.cell_px),
                place=f"cell {sheet + 1}/{cell}",
                where={"sheet": sheet + 1, "cell": cell},
            )
        )
    unique = list({e.id: e for e in evidence}.values())
    return [e.id for e in unique], unique
