"""The VideoARM graph: START -> control -> (act -> control)* -> answer -> END.

Each step the controller reads the memory and the current focus and calls one tool (``act``), which
writes one memory entry; at the step limit the answer is forced.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from videoatlas.agents.relation import RELATION_TEMPLATES
from videoatlas.agents.tool_loop import build_tool_loop
from videoatlas.agents.videoarm.act import act
from videoatlas.agents.videoarm.answer import answer
from videoatlas.agents.videoarm.control import control
from videoatlas.agents.videoarm.state import ArmOutput, ArmState
from videoatlas.prompts import TemplateSpec

AGENT_NAME = "videoarm"
TEMPLATES: TemplateSpec = {
    "controller.system": (frozenset(), frozenset({"k"})),
    "tool.system": (frozenset(), frozenset({"k"})),
    "step.user": (
        frozenset({"question", "memory"}),
        frozenset(
            {
                "choices",
                "duration",
                "seconds",
                "frames",
                "fps",
                "focus",
                "clip_frames",
                "counts",
                "listen",
                "step",
                "steps",
                "relation",
            }
        ),
    ),
    # The time relation: asked at the first step, then its anchor sought, then its window (control.py).
    **RELATION_TEMPLATES,
    "listen.line": (frozenset(), frozenset()),
    "deaf.line": (frozenset(), frozenset({"why"})),
    "snap.user": (frozenset(), frozenset({"count", "ranges", "question", "choices", "anchor_request"})),
    "clip.user": (frozenset({"question"}), frozenset({"count", "start", "end", "anchor_request"})),
    "answer.user": (
        frozenset({"question", "memory"}),
        frozenset({"choices", "duration", "evidence", "format", "relation"}),
    ),
}
"""The prompt templates this agent uses (``agents/videoarm/prompts/default/``), with their variables."""


def build_graph(checkpointer: BaseCheckpointSaver[Any] | None = None) -> Any:
    """Compile the VideoARM graph (the tool loop: the controller, its tools, the answer)."""
    return build_tool_loop(ArmState, ArmOutput, ("control", control), ("act", act), answer, checkpointer)
