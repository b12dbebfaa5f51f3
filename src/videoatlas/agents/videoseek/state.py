"""VideoSeek's state: the trajectory of turns (thought, tool, arguments, observation) and the answer keys."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field

from videoatlas.agents.relation import Anchor
from videoatlas.agents.tool_loop import ToolLoopOutput, ToolLoopState
from videoatlas.state.models import Frozen, merge_by

Tool = Literal["overview", "skim", "focus", "answer"]


class Turn(Frozen):
    """One think-act-observe turn: what the planner thought and called, and what the tool saw."""

    index: int
    """1 for the first turn."""
    thought: str
    tool: Tool
    query: str = ""
    start: float | None = None
    end: float | None = None
    """The span the tool looked at (after it was brought within the tool's limits)."""
    frames: list[float] = Field(default_factory=list)
    """Times of the frames the tool showed the model."""
    observation: str = ""
    """What the tool reported back to the planner."""
    relevant: list[float] = Field(default_factory=list)
    """Times of frames the tool flagged as bearing on the query."""
    notes: list[str] = Field(default_factory=list)
    """Per flagged frame, what the tool said it shows (same order as ``relevant``)."""
    anchor: float | None = None
    """The time of the frame the tool said shows the relation's anchor (None: not asked, or none did)."""


def add_turns(current: Sequence[Turn] | None, update: Sequence[Turn] | None) -> list[Turn]:
    """The trajectory in turn order (a turn written again replaces itself)."""
    return merge_by(current, update, lambda t: t.index)


class SeekState(ToolLoopState):
    """Everything VideoSeek keeps: the trajectory, the next call planned, the answer (``round``: turns taken)."""

    turns: Annotated[list[Turn], add_turns]
    thought: str


def anchor_of(turns: Sequence[Turn]) -> Anchor | None:
    """Where the relation's anchor was seen: the first frame a tool named as showing it (None: not yet)."""
    for turn in turns:
        if turn.anchor is not None:
            return Anchor.at(turn.anchor)
    return None


class SeekOutput(ToolLoopOutput):
    """What a run returns: the shared answer keys, the relation and the trajectory."""

    turns: list[Turn]
