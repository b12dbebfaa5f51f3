"""The controller's step: from the question, the memory and the current focus's mosaics, one call with its reason.

The prompt is built again every step from the state alone: the video's facts, the question, the
memory entries, the tools on offer, and the mosaics of the long-term pool (drawn again from the
frame indices kept). Nothing of an earlier call's prompt, and no tool's own frames, comes back.
At the step limit, or out of budget, the answer is forced without asking.
"""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from videoatlas.agents.tool_loop import choose_tool, next_step
from videoatlas.agents.videoarm.render import MOSAIC, fps_of, frame_count, sheets
from videoatlas.agents.videoarm.schemas import step_schema
from videoatlas.agents.videoarm.settings import VideoArmSettings, arm
from videoatlas.agents.videoarm.state import ArmState
from videoatlas.agents.videoarm.views import CONTROLLER_SYSTEM, memory_text, span_text
from videoatlas.environment.timefmt import format_ts
from videoatlas.llm.images import ImagePart
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
    duration = ctx.atlas.duration
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
        "listen": listen.strip(),
        "memory": memory_text(memory),
        "step": step,
        "steps": settings.steps,
    }
    emit(STEP_EVENT, step=step)
    # Without a usable step: survey the whole video first, and once something is in memory, answer.
    instead = (
        ({"tool": "answer"}, "answer from the memory")
        if memory
        else ({"tool": "scene_snapper", "ranges": [], "num_frames": 30}, "scene_snapper over the whole video")
    )
    call, reason, update = await choose_tool(
        ctx,
        step_schema(tools, duration),
        await focus_images(state, ctx),
        values,
        node="control",
        template="step",
        system=CONTROLLER_SYSTEM,
        thinker="controller",
        turn=step,
        said="reason",
        instead=instead,
    )
    emit(CALLED_EVENT, step=step, tool=call["tool"], reason=reason)
    return next_step(call, update, "act", "controller")
