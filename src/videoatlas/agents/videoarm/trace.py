"""How a VideoARM run reads back: step by step, the tool called and why, what it returned, what it showed.

``trace`` prints the steps; the run page shows them (with the mosaics each call showed and the
speech heard) above the node timeline; ``ask`` prints a line as each step starts and is decided.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from videoatlas.agents import tool_loop
from videoatlas.agents.page import PageContext, timeline
from videoatlas.agents.videoarm.control import CALLED_EVENT, STEP_EVENT
from videoatlas.agents.videoarm.views import entry_header, heard_line, seen_text
from videoatlas.agents.views import step_head
from videoatlas.textsafe import model_words


def detail(values: dict[str, Any], calls: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The memory as plain data, each step with the images its tool call showed."""
    shown: dict[tuple[str, int | None], list[str]] = {}
    for call in calls:
        if call["node"] in ("scene_snapper", "clip_analyzer"):
            shown.setdefault((call["node"], call["round"]), []).extend(call.get("images") or [])
    steps = []
    for e in values.get("memory", []):
        steps.append(
            {
                "index": e.step,
                "header": entry_header(e),
                "tool": e.tool,
                "reason": e.reason,
                "ranges": [list(r) for r in e.ranges],
                "frames": len(e.frames),
                "question": e.question,
                "output": e.output,
                "confidence": e.confidence,
                "seen": seen_text(e.seen),
                "transcript": [heard_line(h.start, h.end, h.text) for h in e.heard],
                "images": shown.get((e.tool, e.step), []),
            }
        )
    return {"steps": steps, "deaf": values.get("deaf", "")}


def lines(found: dict[str, Any], repairs: dict[int, list[str]]) -> list[str]:
    """One block per step: the call, its reason, what came back."""
    out = []
    for step in found["steps"]:
        out += step_head(step, "reason", repairs)
        if step["question"]:
            out.append(f"    | sub-question: {step['question'][:160]}")
        said = step["transcript"] or [step["output"]]
        out += [f"    | {line[:160]}" for line in said[:6]]
        if step["confidence"] is not None:
            out.append(f"    | confidence {step['confidence']:.2f}")
        if step.get("seen"):
            out.append(f"    | seen in {step['seen'][:160]}")
    return out


def page_view(trace: dict[str, Any], context: PageContext) -> dict[str, Any]:
    """The run page's VideoARM section: the steps (tool, reason, result, mosaics, transcript), then the timeline."""
    steps = trace["detail"].get("steps", [])
    turns = [
        {
            "index": s["index"],
            "header": s["header"],
            "thought": s["reason"],
            "observation": "\n".join(
                ([f"sub-question: {s['question']}"] if s["question"] else [])
                + (s["transcript"] or [s["output"]])
                + ([f"seen in {s['seen']}"] if s.get("seen") else [])
            ),
            "images": s["images"],
        }
        for s in steps
    ]
    facts = [("audio", trace["detail"]["deaf"])] if trace["detail"].get("deaf") else []
    return {"turns": turns, "timeline": timeline(trace), "steps": len(steps), "facts": facts}


def describe_event(event: dict[str, Any]) -> str | None:
    """A progress line for the controller's events (and the final decision's)."""
    if event.get("event") == STEP_EVENT:
        return f"step {event.get('step')}: deciding..."
    if event.get("event") == CALLED_EVENT:
        reason = model_words(str(event.get("reason") or ""), 100)
        return f"step {event.get('step')}: {event.get('tool')}" + (f"; the model's reason: {reason}" if reason else "")
    return tool_loop.describe_event(event)
