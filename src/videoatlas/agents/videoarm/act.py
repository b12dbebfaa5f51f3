"""The tool the controller called, run once; its result becomes one memory entry.

* scene_snapper: ``num_frames`` (30, 60, 90 or 150) frames shared out over the ranges by length,
  short side 256 px, as 3 x 2 mosaics, with the question and its choices; a one-sentence caption and
  the frames that show what the question asks about; its frames become the long-term pool;
* clip_analyzer: up to 50 frames of one stretch, short side 512 px, on 4 x 3 contact sheets; an
  answer to a sub-question with a confidence in [0, 1], and the frames it rests on;
* audio_transcriber: the whole of the ranges from the run's speech track (transcribed by the
  endpoint's transcription route when not yet heard, read from the cache otherwise; see
  :mod:`videoatlas.runtime.speech`), in video time.

The short-term pool (a tool's frames) lives only in this call. A sound track that cannot be read,
or an endpoint with no transcription route, withdraws audio_transcriber for the rest of the run
with one line in the trace; the run goes on with the other tools. While a time relation's anchor is
sought, scene_snapper and clip_analyzer are also asked which of their frames shows it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import structlog
from langgraph.runtime import Runtime

from videoatlas.agents.videoarm.control import anchor_of, offered_counts
from videoatlas.agents.videoarm.render import MOSAIC, SHEET, sheets, spread, time_of
from videoatlas.agents.videoarm.schemas import report_schema
from videoatlas.agents.videoarm.settings import SNAP_FRAMES, arm
from videoatlas.agents.videoarm.state import ArmState, Entry, Heard
from videoatlas.agents.videoarm.views import TOOL_SYSTEM, ranges_text, span_text
from videoatlas.environment.geometry import Interval
from videoatlas.errors import ModelReplyError
from videoatlas.llm.images import ImagePart
from videoatlas.runtime.calls import as_image, ask, choices_block, emit, failed_call_cost, frame_ledger, hear
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Where
from videoatlas.state.models import Cost, Repair

log = structlog.get_logger(__name__)
ACT_EVENT = "arm_act"


def clamp_ranges(raw: Sequence[dict[str, Any]], duration: float) -> tuple[list[tuple[float, float]], list[str]]:
    """The ranges inside the video, forwards, overlaps kept; an empty or unusable list is the whole video.

    Returns them and a note per range that was changed or dropped.
    """
    out: list[tuple[float, float]] = []
    notes: list[str] = []
    for r in raw:
        a0, b0 = float(r.get("start", 0.0)), float(r.get("end", 0.0))
        a, b = sorted((min(max(a0, 0.0), duration), min(max(b0, 0.0), duration)))
        if b - a < 1e-3:
            notes.append(f"empty range {a0:g}-{b0:g} s left out")
            continue
        if (a, b) != (a0, b0):
            notes.append(f"range {a0:g}-{b0:g} s brought to {a:.1f}-{b:.1f} s (inside the video, forwards)")
        out.append((a, b))
    return out or [(0.0, duration)], notes


def clip_span(start: float, end: float, duration: float) -> tuple[float, float]:
    """clip_analyzer's stretch: inside the video, forwards, at least one second long."""
    a, b = sorted((min(max(start, 0.0), duration), min(max(end, 0.0), duration)))
    if b - a < 1.0:
        middle = (a + b) / 2
        a = max(0.0, min(middle - 0.5, duration - 1.0))
        b = min(duration, a + 1.0)
    return a, b


async def act(state: ArmState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Run the planned call and write its memory entry."""
    ctx = runtime.context
    planned = state["planned"] or {"tool": "scene_snapper", "ranges": [], "num_frames": SNAP_FRAMES[0]}
    step = len(state.get("memory") or []) + 1
    tool = str(planned["tool"])
    entry = Entry(step=step, tool=tool, reason=state.get("reason", ""))  # type: ignore[arg-type]
    emit(ACT_EVENT, step=step, tool=tool)
    relation = state.get("relation")
    seeking = relation is not None and relation.anchored and anchor_of(state.get("memory") or [], ctx.atlas) is None
    sought = relation.anchor if seeking and relation is not None else ""
    if tool == "scene_snapper":
        update = await _snap(ctx, planned, entry, state["question"], state["choices"], sought)
    elif tool == "clip_analyzer":
        update = await _clip(ctx, planned, entry, sought)
    else:
        update = await _listen(ctx, planned, entry)
    return {"planned": None, "round": step, **update}


def _dropped(step: int, notes: Sequence[str]) -> list[Repair]:
    return [Repair(node="act", round=step, kind="dropped", detail=note) for note in notes]


def _request(ctx: AgentContext, sought: str) -> str:
    """The line asking a tool for the anchor's frame ("" when no anchor is sought)."""
    return ctx.prompts.render("anchor_request.note", anchor=sought).strip() if sought else ""


def _named(value: Any, frames: Sequence[int]) -> int | None:
    """The frame a report names as showing the anchor (the first shown one; None when it names none)."""
    return next((int(f) for f in getattr(value, "anchor", []) if int(f) in frames), None)


async def _report(
    ctx: AgentContext,
    tool: str,
    template: str,
    images: list[ImagePart],
    values: dict[str, Any],
    entry: Entry,
    frames: Sequence[int],
    sought: str,
) -> tuple[Any, Cost, Entry, str]:
    """A tool's report on its frames (``template``: ``snap`` or ``clip``), asking for the anchor's frame while sought.

    Returns the reply (None when it cannot be used), its cost (a fallback counted when unusable), the
    entry with the frames the report named (those showing what the question asks about, and the
    anchor's), and why the reply was unusable ("" when it was not).
    """
    schema = report_schema(template, frames, anchor=bool(sought))
    values = {**values, "anchor_request": _request(ctx, sought)}
    try:
        reply, cost = await ask(
            ctx, schema, tool, template, images, values, system=TOOL_SYSTEM, thinker="tools", budgeted=True,
            meta={"round": entry.step},
        )  # fmt: skip
    except ModelReplyError as exc:
        return None, failed_call_cost(exc) + Cost(fallbacks=1, **frame_ledger(images)), entry, str(exc)
    value: Any = reply.value
    shown = set(frames)
    seen = [(f, time_of(ctx.atlas, f)) for f in dict.fromkeys(int(f) for f in value.frames) if f in shown]
    named = {"seen": seen, "anchor": _named(value, frames) if sought else None}
    return value, cost, entry.model_copy(update=named), ""


async def _snap(
    ctx: AgentContext, planned: dict[str, Any], entry: Entry, question: str, choices: Sequence[str], sought: str
) -> dict[str, Any]:
    settings = arm(ctx)
    ranges, notes = clamp_ranges(planned.get("ranges") or [], ctx.atlas.duration)
    counts = offered_counts(ctx)
    wanted = int(planned.get("num_frames") or counts[0])
    count = min(counts, key=lambda n: (abs(n - wanted), n))
    if count != wanted:
        notes.append(f"num_frames {wanted} brought to {count} (one of {', '.join(map(str, counts))} on this endpoint)")
    frames = spread(ctx.atlas, ranges, count)
    pages = await sheets(ctx.atlas, frames, *MOSAIC, settings.snap_px)
    images = [as_image(page, f"mosaic {n + 1}") for n, page in enumerate(pages)]
    entry = entry.model_copy(update={"ranges": ranges, "frames": frames, "mosaics": len(pages)})
    values = {"count": len(frames), "ranges": ranges_text(ranges), "question": question}
    values["choices"] = choices_block(choices)  # what would answer it, so that the caption names what bears on it
    value, cost, entry, unusable = await _report(ctx, "scene_snapper", "snap", images, values, entry, frames, sought)
    if value is None:
        notes.append(f"scene_snapper caption unusable: {unusable}")
        caption = "(the caption could not be read)"
    else:
        caption = value.caption
    entry = entry.model_copy(update={"output": caption})
    return {"memory": [entry], "focus": frames, "cost": cost, "repairs": _dropped(entry.step, notes)}


async def _clip(ctx: AgentContext, planned: dict[str, Any], entry: Entry, sought: str) -> dict[str, Any]:
    settings = arm(ctx)
    duration = ctx.atlas.duration
    a, b = clip_span(float(planned.get("start", 0.0)), float(planned.get("end", duration)), duration)
    count = min(settings.clip_frames, max(1, math.ceil((b - a) * settings.clip_fps)))
    frames = spread(ctx.atlas, [(a, b)], count)[: settings.clip_frames]
    pages = await sheets(ctx.atlas, frames, *SHEET, settings.clip_px)
    images = [as_image(page, f"sheet {n + 1}") for n, page in enumerate(pages)]
    question = str(planned.get("question") or "")
    entry = entry.model_copy(update={"ranges": [(a, b)], "frames": frames, "mosaics": len(pages), "question": question})
    values = {"count": len(frames), "start": span_text(a, b).split("-")[0], "end": span_text(a, b).split("-")[1]}
    values["question"] = question or "(none given)"
    notes: list[str] = []
    value, cost, entry, unusable = await _report(ctx, "clip_analyzer", "clip", images, values, entry, frames, sought)
    if value is None:
        notes.append(f"clip_analyzer answer unusable: {unusable}")
        answer, confidence = "(the answer could not be read)", 0.0
    else:
        answer, confidence = value.answer, min(1.0, max(0.0, float(value.confidence)))
    entry = entry.model_copy(update={"output": answer, "confidence": confidence})
    return {"memory": [entry], "cost": cost, "repairs": _dropped(entry.step, notes)}


async def _listen(ctx: AgentContext, planned: dict[str, Any], entry: Entry) -> dict[str, Any]:
    ranges, notes = clamp_ranges(planned.get("ranges") or [], ctx.atlas.duration)
    entry = entry.model_copy(update={"ranges": ranges})
    spans = [Interval(a, b) for a, b in ranges]
    heard = await hear(ctx, spans, Where("act", entry.step), whole=True)
    repairs = [*_dropped(entry.step, notes), *heard.repairs]
    if heard.subtitles is None:
        why = f"audio_transcriber withdrawn for this run: {deafness_of(ctx)}"
        entry = entry.model_copy(update={"output": f"(nothing heard: {why})"})
        return {"memory": [entry], "deaf": deafness_of(ctx), "repairs": repairs, "cost": heard.cost}
    # Each stretch of speech as much of it as lies in the ranges listened to.
    lines = {
        (max(ln.start, span.start), min(ln.end, span.end), ln.text)
        for span in spans
        for ln in heard.subtitles.overlapping(span)
    }
    said = [Heard(start=a, end=b, text=text) for a, b, text in sorted(lines)]
    summary = "(no speech heard in these stretches)" if not said else f"{len(said)} stretch(es) of speech"
    entry = entry.model_copy(update={"heard": said, "output": summary})
    return {"memory": [entry], "repairs": repairs, "cost": heard.cost}


def deafness_of(ctx: AgentContext) -> str:
    """Why the run hears nothing (the speech track withdrawn, or never opened)."""
    if ctx.speech is not None:
        return ctx.speech.withdrawn or "nothing could be heard"
    return "the run has no speech track"
