"""VideoARM's state: the hierarchical memory (HM3) as typed records, never pictures.

* sensory memory: the long-term pool is the frame indices of the current focus (its mosaics are
  drawn again from the video whenever shown); the short-term pool lives only inside one tool call;
* result memory: per step the tool, the stretch it worked on and what it returned;
* working memory: per step the controller's reason for the call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field

from videoatlas.agents.tool_loop import ToolLoopOutput, ToolLoopState
from videoatlas.state.models import Frozen, merge_by

Tool = Literal["scene_snapper", "clip_analyzer", "audio_transcriber"]


class Heard(Frozen):
    """A stretch of speech, in video seconds."""

    start: float
    end: float
    text: str


class Entry(Frozen):
    """One step's memory: the call and its reason (working memory), and what came back (result memory)."""

    step: int
    """1 for the first step."""
    tool: Tool
    reason: str
    """Why the controller made this call (working memory)."""
    ranges: list[tuple[float, float]] = Field(default_factory=list)
    """The stretches of video the tool worked on, in seconds."""
    frames: list[int] = Field(default_factory=list)
    """Frame indices the tool showed the model."""
    mosaics: int = 0
    """Images those frames were tiled into."""
    question: str = ""
    """clip_analyzer's sub-question."""
    output: str = ""
    """scene_snapper's caption, clip_analyzer's answer, or a note on what was (not) heard."""
    confidence: float | None = None
    """clip_analyzer's confidence in its answer, in [0, 1]."""
    heard: list[Heard] = Field(default_factory=list)
    """audio_transcriber's segments."""
    seen: list[tuple[int, float]] = Field(default_factory=list)
    """The frames the tool's report named as showing what the question asks about: (frame index, video seconds)."""
    anchor: int | None = None
    """The frame index the tool said shows the time relation's anchor (None: not asked, or none did)."""


def add_entries(current: Sequence[Entry] | None, update: Sequence[Entry] | None) -> list[Entry]:
    """The memory in step order (a step written again replaces itself)."""
    return merge_by(current, update, lambda e: e.step)


class ArmState(ToolLoopState):
    """Everything VideoARM keeps between steps (``round``: the steps taken; ``planned``: the controller's call)."""

    memory: Annotated[list[Entry], add_entries]
    focus: list[int]
    """The long-term pool: frame indices of the current focus (scene_snapper's last frames)."""
    reason: str
    deaf: str
    """Why audio_transcriber was withdrawn for this run ("" while it is offered where there is audio)."""


class ArmOutput(ToolLoopOutput):
    """What a run returns: the shared answer keys, the relation and the memory."""

    memory: list[Entry]
