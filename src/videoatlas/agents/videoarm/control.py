"""The controller's step: from the question, the memory and the current focus's mosaics, one call with its reason.

The prompt is built again every step from the state alone: the video's facts, the question, the
memory entries, the tools on offer, and the mosaics of the long-term pool (drawn again from the
frame indices kept). Nothing of an earlier call's prompt, and no tool's own frames, comes back.
The step itself is the tool loop's (:func:`~videoatlas.agents.tool_loop.think`): after ``steps`` tool
steps (the paper's N), or out of budget, the answer is forced without asking.

The first step also says the question's time relation ("right after the banner"); while its anchor is
sought, the tools are asked which frame shows it, and the step right after one did is held to the
window the relation names beside it (its call's times bounded by the schema, and held there).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from videoatlas.agents.relation import Anchor, inside
from videoatlas.agents.tool_loop import Ask, Step, Thinker, think
from videoatlas.agents.videoarm.render import MOSAIC, fps_of, frame_count, mosaics, sheets, snap_counts, time_of
from videoatlas.agents.videoarm.schemas import step_schema
from videoatlas.agents.videoarm.settings import SNAP_FRAMES, VideoArmSettings, arm
from videoatlas.agents.videoarm.state import ArmState, Entry
from videoatlas.agents.videoarm.views import CONTROLLER_SYSTEM, memory_text, span_text
from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.geometry import Interval
from videoatlas.errors import BadInputError
from videoatlas.llm.images import RAISE_IMAGE_LIMIT, ImagePart
from videoatlas.runtime.calls import as_image
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
    """Ask the controller for the next call; after ``steps`` tool steps or out of budget, go to the answer."""
    ctx = runtime.context
    settings = arm(ctx)
    memory = state.get("memory") or []
    return await think(
        CONTROLLER,
        state,
        ctx,
        taken=memory,
        anchor=anchor_of(memory, ctx.atlas),
        limit=settings.steps,
        window_s=window_s(ctx.atlas.duration, settings),
        confidence=settings.confidence,
        ask_for=partial(step_ask, state, ctx, settings),
    )


async def step_ask(state: ArmState, ctx: AgentContext, settings: VideoArmSettings, step: Step) -> Ask:
    """The controller's request at ``step``: the tools on offer, the focus mosaics, the memory, the fallback call."""
    memory = state.get("memory") or []
    tools, why = offered(state, ctx, settings)
    counts = offered_counts(ctx)
    listen = ctx.prompts.render("deaf.line", why=why) if why else ctx.prompts.render("listen.line")
    values = {
        "frames": frame_count(ctx.atlas),
        "fps": f"{fps_of(ctx.atlas):g}",
        "focus": focus_text(state, ctx),
        "clip_frames": settings.clip_frames,
        "counts": ", ".join(map(str, counts[:-1])) + f" or {counts[-1]}" if len(counts) > 1 else str(counts[0]),
        "listen": listen.strip(),
        "memory": memory_text(memory),
        "step": step.number,
        "steps": step.limit,
    }
    # Without a usable step: survey the whole video first, and once something is in memory, answer (asked again
    # after an answer held back: survey it, answering is not on offer then).
    survey = ({"tool": "scene_snapper", "ranges": [], "num_frames": counts[0]}, "scene_snapper over the whole video")
    instead = ({"tool": "answer"}, "answer from the memory") if memory and step.unsure is None else survey
    tools = list(step.offered(tools))
    held = step.relation.held
    if held is not None:
        instead = ({"tool": "clip_analyzer", "start": held.start, "end": held.end, "question": ""}, "the window")
    relation = step.relation
    schema = step_schema(tools, ctx.atlas.duration, relation=relation.asked, window=relation.window, counts=counts)
    return Ask(schema, await focus_images(state, ctx), values, instead, tools)


def anchor_of(memory: list[Entry], atlas: VideoAtlas) -> Anchor | None:
    """Where the relation's anchor was seen: the first frame a tool named as showing it (None: not yet)."""
    for entry in memory:
        if entry.anchor is not None:
            return Anchor.at(time_of(atlas, entry.anchor))
    return None


def window_s(duration: float, settings: VideoArmSettings) -> float:
    """How long the window beside the anchor is: one clip_analyzer stretch, or one survey spacing if longer.

    A survey of the whole video (30 frames) shows frames that far apart, and a clip looks at that much
    closely, so what comes right after (or just before) the anchor lies within it.
    """
    return max(settings.clip_frames / settings.clip_fps, duration / SNAP_FRAMES[0])


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


CONTROLLER = Thinker(
    name="controller",
    node="control",
    template="step",
    system=CONTROLLER_SYSTEM,
    said="reason",
    tool="act",
    unit="tool step",
    events=(STEP_EVENT, CALLED_EVENT),
    hold=held_to,
)
"""VideoARM's thinker: the controller, whose calls ``act`` runs."""
