"""The VideoARM graph: START -> control -> (act -> control)* -> answer -> END.

Each step the controller reads the memory and the current focus and calls one tool (``act``), which
writes one memory entry; at the step limit the answer is forced.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from videoatlas.agents.videoarm.act import act
from videoatlas.agents.videoarm.answer import answer
from videoatlas.agents.videoarm.control import control
from videoatlas.agents.videoarm.state import ArmOutput, ArmState
from videoatlas.prompts import TemplateSpec
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.tracing import traced
from videoatlas.state.run import QuestionInput

AGENT_NAME = "videoarm"
TEMPLATES: TemplateSpec = {
    "controller.system": (frozenset(), frozenset({"k"})),
    "tool.system": (frozenset(), frozenset({"k"})),
    "step.user": (
        frozenset({"question", "memory"}),
        frozenset(
            {"choices", "duration", "seconds", "frames", "fps", "focus", "clip_frames", "listen", "step", "steps"}
        ),
    ),
    "listen.line": (frozenset(), frozenset()),
    "deaf.line": (frozenset(), frozenset({"why"})),
    "snap.user": (frozenset(), frozenset({"count", "ranges", "question"})),
    "clip.user": (frozenset({"question"}), frozenset({"count", "start", "end"})),
    "answer.user": (frozenset({"question", "memory"}), frozenset({"choices", "duration", "evidence", "format"})),
}
"""The prompt templates this agent uses (``agents/videoarm/prompts/default/``), with their variables."""


def build_graph(checkpointer: BaseCheckpointSaver[Any] | None = None) -> Any:
    """Compile the VideoARM graph."""
    builder = StateGraph(ArmState, input_schema=QuestionInput, output_schema=ArmOutput, context_schema=AgentContext)
    builder.add_node("control", traced("control", control), destinations=("act", "answer"))
    builder.add_node("act", traced("act", act))
    builder.add_node("answer", traced("answer", answer))
    builder.add_edge(START, "control")
    builder.add_edge("act", "control")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=checkpointer)
