"""The controller's step: from the question, the memory and the current focus's mosaics, one call with its reason.

The prompt is built again every step from the state alone: the video's facts, the question, the
memory entries, the tools on offer, and the mosaics of the long-term pool (drawn again from the
frame indices kept). Nothing of an earlier call's prompt, and no tool's own frames, comes back.
At the step limit, or out of budget, the answer is forced without asking.

The first step also says the question's time relation ("right after the banner"); while its anchor is
sought, the tools are asked which frame shows it, and the step right after one did is held to the
window the relation names beside it (its call's times bounded by the schema, and held there).
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from videoatlas.agents.relation import Anchor, Relation, RelationStep, inside, relation_note, window
from videoatlas.agents.tool_loop import choose_tool, next_step
from videoatlas.agents.videoarm.render import MOSAIC, fps_of, frame_count, mosaics, sheets, snap_counts, time_of
from videoatlas.agents.videoarm.schemas import step_schema
from videoatlas.agents.videoarm.settings import SNAP_FRAMES, VideoArmSettings, arm
from videoatlas.agents.videoarm.state import ArmState, Entry
from videoatlas.agents.videoarm.views import CONTROLLER_SYSTEM, memory_text, span_text
from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.geometry import Interval
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import BadInputError
from videoatlas.llm.images import RAISE_IMAGE_LIMIT, ImagePart
from videoatlas.runtime.calls import as_image, budget_exhausted, choices_block, emit
from videoatlas.runtime.context import AgentContext

STEP_EVENT = "arm_step"
CALLED_EVENT = "arm_called"


def offered(state: ArmState, ctx: AgentContext, settings: VideoArmSettings) -> tuple[list[str], str]:
    """The tools this step offers, and why audio_transcriber is not among them ("" when it is)."""
    why = deafness(state, ctx, settings)
    tools = ["scene_snapper", "clip_analyzer", *([] if why else ["audio_transcriber"]), "answer"]
    return tools, why


def deafness(state: ArmState, ctx: AgentContext, settings: VideoArmSettings) -> str:
    """Why the video cannot be listened to in this run ("" when it can)."""
    if settings.no_audio:
        return "listening is turned off for this run (no_audio)"
    if not ctx.atlas.source.info.has_audio:
        return "the video has no sound track"
    if ctx.subtitles is None and ctx.speech is None:
        return "speech is off for this run (--speech off)"
    return state.get("deaf") or ""


def offered_counts(ctx: AgentContext) -> tuple[int, ...]:
    """scene_snapper's frame counts this run offers: those whose mosaics the endpoint takes in one prompt.

    Raises :class:`BadInputError` when the endpoint takes too few images for even the smallest count.
    """
    limit = ctx.vlm.settings.max_images
    counts = snap_counts(limit)
    if not counts:
        raise BadInputError(
            f"VideoARM's smallest survey ({SNAP_FRAMES[0]} frames) needs {mosaics(SNAP_FRAMES[0])} images in one "
            f"prompt and the endpoint takes {limit} ({RAISE_IMAGE_LIMIT})"
        )
    return counts


async def focus_images(state: ArmState, ctx: AgentContext) -> list[ImagePart]:
    """The long-term pool as the controller sees it: the focus frames' 3 x 2 mosaics, drawn again."""
    focus = state.get("focus") or []
    pages = await sheets(ctx.atlas, focus, *MOSAIC, arm(ctx).snap_px)
    return [as_image(page, f"focus {n + 1}") for n, page in enumerate(pages)]


def focus_text(state: ArmState, ctx: AgentContext) -> str:
    """A line on the current focus: which frames the mosaics show."""
    focus = state.get("focus") or []
    if not focus:
        return "none yet (no mosaics shown)"
    fps = fps_of(ctx.atlas)
    where = span_text(focus[0] / fps, (focus[-1] + 1) / fps)
    return f"{len(focus)} frames, {focus[0]} to {focus[-1]} ({where}), shown below"


async def control(state: ArmState, runtime: Runtime[AgentContext]) -> Command[Literal["act", "answer"]]:
    """Ask the controller for the next call; at the step limit or out of budget, go to the answer."""
    ctx = runtime.context
    settings = arm(ctx)
    memory = state.get("memory") or []
    step = len(memory) + 1
    if step >= settings.steps:
        return Command(
            goto="answer", update={"stop_reason": f"step {settings.steps} of {settings.steps}: answer forced"}
        )
    spent = budget_exhausted(state["cost"], ctx.config.call_budget, ctx.config.token_budget)
    if spent:
        return Command(goto="answer", update={"stop_reason": spent})
    tools, why = offered(state, ctx, settings)
    counts = offered_counts(ctx)
    duration = ctx.atlas.duration
    relation = state.get("relation")
    anchor = anchor_of(memory, ctx.atlas)
    beside = anchor_window(relation, anchor, duration, settings) if anchor is not None else None
    # The step right after a tool saw the anchor looks inside its window.
    held = beside if beside is not None and memory[-1].anchor is not None else None
    listen = ctx.prompts.render("deaf.line", why=why) if why else ctx.prompts.render("listen.line")
    values = {
        "question": state["question"],
        "choices": choices_block(state["choices"]),
        "duration": format_ts(duration, 0),
        "seconds": f"{duration:.1f}",
        "frames": frame_count(ctx.atlas),
        "fps": f"{fps_of(ctx.atlas):g}",
        "focus": focus_text(state, ctx),
        "clip_frames": settings.clip_frames,
        "counts": ", ".join(map(str, counts[:-1])) + f" or {counts[-1]}" if len(counts) > 1 else str(counts[0]),
        "listen": listen.strip(),
        "memory": memory_text(memory),
        "step": step,
        "steps": settings.steps,
        "relation": relation_note(ctx.prompts, relation, anchor, beside),
    }
    emit(STEP_EVENT, step=step)
    # Without a usable step: survey the whole video first, and once something is in memory, answer.
    instead = (
        ({"tool": "answer"}, "answer from the memory")
        if memory
        else ({"tool": "scene_snapper", "ranges": [], "num_frames": counts[0]}, "scene_snapper over the whole video")
    )
    if held is not None:
        instead = ({"tool": "clip_analyzer", "start": held.start, "end": held.end, "question": ""}, "the window")
    step_relation = RelationStep(asked=relation is None, held=held, hold=held_to)
    call, reason, update = await choose_tool(
        ctx,
        step_schema(tools, duration, relation=step_relation.asked, window=step_relation.window, counts=counts),
        await focus_images(state, ctx),
        values,
        node="control",
        template="step",
        system=CONTROLLER_SYSTEM,
        thinker="controller",
        turn=step,
        said="reason",
        instead=instead,
        relation=step_relation,
    )
    emit(CALLED_EVENT, step=step, tool=call["tool"], reason=reason)
    return next_step(call, update, "act", "controller")


def anchor_of(memory: list[Entry], atlas: VideoAtlas) -> Anchor | None:
    """Where the relation's anchor was seen: the first frame a tool named as showing it (None: not yet)."""
    for entry in memory:
        if entry.anchor is not None:
            return Anchor.at(time_of(atlas, entry.anchor))
    return None


def anchor_window(
    relation: Relation | None, anchor: Anchor, duration: float, settings: VideoArmSettings
) -> Interval | None:
    """The window the relation names beside the anchor: one clip_analyzer stretch, or one survey spacing if longer.

    A survey of the whole video (30 frames) shows frames that far apart, and a clip looks at that much
    closely, so what comes right after (or just before) the anchor lies within it.
    """
    length = max(settings.clip_frames / settings.clip_fps, duration / SNAP_FRAMES[0])
    return window(relation, anchor, duration, length)


def held_to(call: dict[str, Any], held: Interval) -> tuple[dict[str, Any], str]:
    """A call with its times held inside ``held`` (no ranges: the whole window), and a note ("" if nothing changed)."""
    if call["tool"] == "answer":
        return call, ""

    if call["tool"] == "clip_analyzer":
        start, end = inside(float(call["start"]), float(call["end"]), held)
        changed = (start, end) != (float(call["start"]), float(call["end"]))
        new = {**call, "start": start, "end": end}
    else:
        asked = [(float(r["start"]), float(r["end"])) for r in call.get("ranges") or []]
        kept = [inside(a, b, held) for a, b in asked] or [(held.start, held.end)]
        changed = kept != asked
        new = {**call, "ranges": [{"start": a, "end": b} for a, b in kept]}
    if not changed:
        return call, ""
    return new, f"{call['tool']} held to {held.start:.1f}-{held.end:.1f} s (the window beside the anchor)"
