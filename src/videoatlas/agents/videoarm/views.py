"""What VideoARM's prompts show: the memory as text (it grows by one entry a step), the tools on offer, evidence."""

from __future__ import annotations

from collections.abc import Sequence

from videoatlas.agents.videoarm.state import Entry
from videoatlas.environment.render import evidence_label
from videoatlas.environment.timefmt import format_ts
from videoatlas.state.models import Evidence

CONTROLLER_SYSTEM = "controller.system"
TOOL_SYSTEM = "tool.system"


def span_text(a: float, b: float) -> str:
    """``00:08.0-00:16.0``: a stretch of video as clock times."""
    return f"{format_ts(a, 1)}-{format_ts(b, 1)}"


def ranges_text(ranges: Sequence[tuple[float, float]]) -> str:
    """The stretches a call worked on, comma-separated."""
    return ", ".join(span_text(a, b) for a, b in ranges) or "(none)"


def heard_line(start: float, end: float, text: str) -> str:
    """One stretch of speech as the prompts quote it: its times, then the words in quotes."""
    return f'[{span_text(start, end)}] "{text}"'


def entry_header(entry: Entry) -> str:
    """One line naming a step's call as it was carried out."""
    where = ranges_text(entry.ranges)
    if entry.tool == "scene_snapper":
        first = f", frames {entry.frames[0]}-{entry.frames[-1]}" if entry.frames else ""
        return (
            f"Step {entry.step}: scene_snapper on {where} ({len(entry.frames)} frames{first}, {entry.mosaics} mosaics)"
        )
    if entry.tool == "clip_analyzer":
        return f"Step {entry.step}: clip_analyzer on {where} ({len(entry.frames)} frames)"
    return f"Step {entry.step}: audio_transcriber on {where}"


def seen_text(seen: Sequence[tuple[int, float]]) -> str:
    """The frames a report named, in time order: ``frame 1216 at 04:03.2, frame 1230 at 04:06.0``."""
    return ", ".join(f"frame {f} at {format_ts(t, 1)}" for f, t in sorted(seen, key=lambda ft: ft[1]))


def entry_lines(entry: Entry) -> list[str]:
    """A step as the controller reads it: the call, its reason, and what it returned."""
    out = [entry_header(entry), f"  reason: {entry.reason}"]
    if entry.tool == "scene_snapper":
        out.append(f"  caption: {entry.output}")
    elif entry.tool == "clip_analyzer":
        out.append(f"  sub-question: {entry.question}")
        confidence = f"{entry.confidence:.2f}" if entry.confidence is not None else "unknown"
        out.append(f"  answer (confidence {confidence}): {entry.output}")
    else:
        out += [f"  {heard_line(h.start, h.end, h.text)}" for h in entry.heard] or [f"  {entry.output}"]
    if entry.seen:
        out.append(f"  seen in: {seen_text(entry.seen)}")
    if entry.anchor is not None:
        out.append(f"  the time relation's anchor is seen in frame {entry.anchor}")
    return out


def memory_text(memory: Sequence[Entry]) -> str:
    """The result and working memory, step by step (nothing but entries: no earlier prompts, no pictures)."""
    if not memory:
        return "(empty: no tool has been called yet)"
    return "\n".join(line for entry in memory for line in entry_lines(entry))


def evidence_block(evidence: Sequence[Evidence]) -> str:
    """One line per memory item the answer may cite: its label, stretch and what it says."""
    if not evidence:
        return "(none: the memory is empty)"
    return "\n".join(f"[{evidence_label(i)}] {e.description}" for i, e in enumerate(evidence))
