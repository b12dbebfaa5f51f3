"""The tool the planner called: the VLM looks at frames (overview, skim or focus) and reports in words.

* overview: 16 alpha frames spread evenly over the whole video, short side 256 px, tiled;
* skim: 4 alpha frames spread over a span of at least 4 alpha s, short side 256 px, tiled, the
  frames that bear on the query flagged;
* focus: a span of at most 4 alpha s at one frame per second, each frame at full resolution (capped
  like ZOOM), answering the query or saying nothing there does.

A span outside those limits is brought within them (and the change recorded); what is said in the
span (the subtitle file's lines, or the speech track heard around each frame shown) goes with the
frames. Every frame shown is counted by the run's frame ledger. While a time relation's anchor is
sought, the tool is also asked which of its frames shows it; that frame's time is the anchor's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.videoseek.schemas import describe_schema, focus_schema
from videoatlas.agents.videoseek.settings import VideoSeekSettings, seek
from videoatlas.agents.videoseek.state import SeekState, Turn, anchor_of
from videoatlas.agents.videoseek.views import TOOL_SYSTEM, subtitles_text
from videoatlas.environment.geometry import Interval
from videoatlas.environment.speech import track_spans
from videoatlas.environment.timefmt import format_moment, format_ts
from videoatlas.errors import ModelReplyError
from videoatlas.llm.images import ImagePart
from videoatlas.runtime.calls import as_image, ask, emit, failed_call_cost, frame_ledger, hear, said
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Heard, Where
from videoatlas.state.models import Cost, Repair
from videoatlas.state.schemas import distinct

COLUMNS = 4
"""Frames to a row in overview and skim mosaics."""
SUBTITLE_CHARS = 1500
"""Characters of the span's subtitles a tool call gets."""


def spread(span: Interval, n: int) -> list[float]:
    """``n`` moments evenly over ``span``: the middles of ``n`` equal parts."""
    return [span.start + (i + 0.5) * span.span / n for i in range(n)]


def within_limits(tool: str, start: float, end: float, duration: float, bound: float) -> tuple[Interval, str]:
    """The span a tool looks at: in the video, forwards, at least (skim) or at most (focus) ``bound`` s.

    Returns the span and a note on what was changed ("" when nothing was).
    """
    a, b = sorted((min(max(start, 0.0), duration), min(max(end, 0.0), duration)))
    length = min(bound, duration)
    if tool == "skim" and b - a < length:
        middle = (a + b) / 2
        a = min(max(0.0, middle - length / 2), duration - length)
        b = a + length
    elif tool == "focus" and b - a > length:
        middle = (a + b) / 2
        a, b = middle - length / 2, middle + length / 2
    elif tool == "focus" and b - a <= 0:
        a = min(max(0.0, a - 0.5), duration - min(1.0, duration))
        b = a + min(1.0, duration)
    span = Interval(a, b)
    changed = abs(a - start) > 1e-6 or abs(b - end) > 1e-6
    limit = f"at least {bound:g} s" if tool == "skim" else f"at most {bound:g} s"
    note = (
        f"{tool} span {start:g}-{end:g} s brought to {a:.1f}-{b:.1f} s ({limit}, inside the video)" if changed else ""
    )
    return span, note


def listened(tool: str, span: Interval, settings: VideoSeekSettings) -> list[Interval]:
    """The stretches a tool hears: one per frame it shows (overview, skim), or the whole span (focus).

    A wide stretch is heard as a sample, chunk by chunk (see :mod:`videoatlas.environment.speech`).
    """
    if tool == "focus":
        return [span]
    count = settings.overview_frames if tool == "overview" else settings.skim_frames
    step = span.span / max(1, count)
    return [Interval(span.start + i * step, span.start + (i + 1) * step) for i in range(max(1, count))]


async def heard_so_far(ctx: AgentContext, turns: Sequence[Turn], settings: VideoSeekSettings, where: Where) -> Heard:
    """What the planner and the answer know is said.

    The track read first, as a subtitle file would be, and what the tools listened to since (read again
    from the speech track's cache: nothing is transcribed twice).
    """
    duration = ctx.atlas.duration
    spans = track_spans(duration, settings.speech_chunks)
    spans += [span for t in turns for span in listened(t.tool, turn_span(t, duration), settings)]
    return await hear(ctx, spans, where) if spans else Heard(said(ctx))


def turn_span(turn: Turn, duration: float) -> Interval:
    """The stretch a turn's tool looked at (an overview: the whole video)."""
    if turn.tool == "overview" or turn.start is None or turn.end is None:
        return Interval(0.0, duration)
    return Interval(turn.start, turn.end)


async def look(state: SeekState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Run the planned tool call and add the turn to the trajectory."""
    ctx = runtime.context
    settings = seek(ctx)
    planned = state["planned"] or {"tool": "overview"}
    turn_no = len(state.get("turns") or []) + 1
    tool = str(planned["tool"])
    duration = ctx.atlas.duration
    repairs: list[Repair] = []
    if tool == "overview":
        span = Interval(0.0, duration)
    else:
        span, note = within_limits(tool, float(planned["start"]), float(planned["end"]), duration, settings.span_s)
        if note:
            repairs.append(Repair(node="look", round=turn_no, kind="dropped", detail=note))
    emit("look", turn=turn_no, tool=tool, start=span.start, end=span.end)
    query = str(planned.get("query", ""))
    if tool == "focus":
        times = spread(span, max(1, min(math.ceil(span.span - 1e-9), int(settings.span_s))))
        rendered = [await ctx.atlas.azoom(t, cell=i) for i, t in enumerate(times)]
    else:
        count = settings.overview_frames if tool == "overview" else settings.skim_frames
        times = spread(span, count)
        rendered = await ctx.atlas.amosaic(times, COLUMNS, max(1, settings.per_image // COLUMNS), settings.short_px)
    images = [as_image(r, f"{tool} {n + 1}") for n, r in enumerate(rendered)]
    heard = await hear(ctx, listened(tool, span, settings), Where("look", turn_no))
    repairs.extend(heard.repairs)
    # Each id's frame as shown: the exact frame on screen at its time (None where it could not be decoded).
    actual = [None if f.get("method") == "unavailable" else float(f["time"]) for r in rendered for f in r.frames]
    shown = [t for t in actual if t is not None]
    relation = state.get("relation")
    seeking = relation is not None and relation.anchored and anchor_of(state.get("turns") or []) is None
    asked = ""
    if seeking and relation is not None:
        asked = ctx.prompts.render("anchor_request.note", anchor=relation.anchor).strip() + " "
    values = {
        "count": len(times),
        "duration": format_ts(duration, 0),
        "start": format_ts(span.start, 1),
        "end": format_ts(span.end, 1),
        "query": query or "(none given)",
        "subtitles": subtitles_text(heard.subtitles, SUBTITLE_CHARS, query, None if tool == "overview" else span),
        "anchor_request": asked,
    }
    ids = list(range(len(times)))
    schema = focus_schema(ids, seeking) if tool == "focus" else describe_schema(ids, tool == "skim", seeking)
    turn = Turn(index=turn_no, thought=state.get("thought", ""), tool=tool, query=query, frames=shown)  # type: ignore[arg-type]
    if tool != "overview":
        turn = turn.model_copy(update={"start": span.start, "end": span.end})
    try:
        reply, cost = await ask(
            ctx,
            schema,
            tool,
            tool,
            images,
            values,
            system=TOOL_SYSTEM,
            thinker="looker",
            budgeted=True,
            meta={"round": turn_no},
        )
    except ModelReplyError as exc:
        cost = failed_call_cost(exc) + _ledger_only(images)
        repairs.append(Repair(node="look", round=turn_no, kind="fallback", detail=f"{tool} report unusable: {exc}"))
        turn = turn.model_copy(update={"observation": "(the tool's report could not be read)"})
        cost = cost + Cost(fallbacks=1)
    else:
        turn = _reported(turn, reply.value, actual)
        if seeking and relation is not None:
            turn = _anchored(turn, reply.value, actual, relation.anchor)
        _, repeated = distinct(int(i) for i in getattr(reply.value, "relevant", []))
        if repeated:
            note = "repeated relevant frames left out: " + ", ".join(str(i) for i in repeated)
            repairs.append(Repair(node="look", round=turn_no, kind="dropped", detail=note))
    return {"turns": [turn], "planned": None, "cost": cost + heard.cost, "repairs": repairs, "round": turn_no}


def _reported(turn: Turn, value: Any, actual: Sequence[float | None]) -> Turn:
    """The turn with the tool's report as the planner will read it (frames by their shown times)."""

    def moment(i: int) -> float | None:
        return actual[i] if 0 <= i < len(actual) else None

    lines: list[str] = []
    notes: dict[int, str] = {}
    for frame in getattr(value, "frames", []):
        t = moment(int(frame.id))
        if t is not None:
            notes[int(frame.id)] = frame.description
            lines.append(f"frame at {format_moment(t)}: {frame.description}")
    flagged, _ = distinct(int(i) for i in getattr(value, "relevant", []) if moment(int(i)) is not None)
    if turn.tool == "focus":
        verdict = "found" if value.found else "not found"
        lines.insert(0, f"{verdict}: {value.description}")
    elif getattr(value, "summary", ""):
        lines.append(f"summary: {value.summary}")
    flagged_times = [t for t in (moment(i) for i in flagged) if t is not None]
    if turn.tool == "skim":
        lines.append("flagged: " + (", ".join(format_moment(t) for t in flagged_times) if flagged_times else "none"))
    lines.append("frames looked at: " + ", ".join(format_ts(t, 1) for t in actual if t is not None))
    described = [notes.get(i, value.description if turn.tool == "focus" else "") for i in flagged]
    return turn.model_copy(update={"observation": "\n".join(lines), "relevant": flagged_times, "notes": described})


def _anchored(turn: Turn, value: Any, actual: Sequence[float | None], anchor: str) -> Turn:
    """The turn with the anchor's frame, when the tool named one: its time, a line in the report, the frame flagged.

    Flagged, the frame is evidence the final decision can cite and the time check can place the answer against.
    """
    named = [actual[i] for i in getattr(value, "anchor", []) if 0 <= int(i) < len(actual)]
    t = next((x for x in named if x is not None), None)
    if t is None:
        return turn.model_copy(update={"observation": f"{turn.observation}\nanchor ({anchor}): not seen here"})
    seen = f"{turn.observation}\nanchor ({anchor}) seen at {format_moment(t)}"
    update: dict[str, Any] = {"anchor": t, "observation": seen}
    if t not in turn.relevant:
        update |= {"relevant": [*turn.relevant, t], "notes": [*turn.notes, f"shows the anchor: {anchor}"]}
    return turn.model_copy(update=update)


def _ledger_only(images: Sequence[ImagePart]) -> Cost:
    """The frames a call showed, when the call itself failed (its images were still sent)."""
    return Cost(**frame_ledger(images))
