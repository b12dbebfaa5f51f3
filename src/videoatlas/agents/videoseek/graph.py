"""The VideoSeek graph: START -> plan -> (look -> plan)* -> answer -> END.

A text-only planner chooses one tool per turn over the trajectory kept in state; the tool (``look``)
shows the VLM frames and reports in words; at the turn limit, one forced answer.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from videoatlas.agents.relation import RELATION_TEMPLATES
from videoatlas.agents.tool_loop import build_tool_loop
from videoatlas.agents.videoseek.answer import answer
from videoatlas.agents.videoseek.look import look
from videoatlas.agents.videoseek.plan import plan
from videoatlas.agents.videoseek.state import SeekOutput, SeekState
from videoatlas.prompts import TemplateSpec

AGENT_NAME = "videoseek"
_TOOL_VARIABLES = frozenset({"count", "duration", "start", "end", "query", "subtitles", "anchor_request"})
TEMPLATES: TemplateSpec = {
    "planner.system": (frozenset(), frozenset({"k"})),
    "tool.system": (frozenset(), frozenset({"k"})),
    "plan.user": (
        frozenset({"question", "history"}),
        frozenset(
            {
                "choices",
                "duration",
                "seconds",
                "subtitles",
                "overview_frames",
                "skim_frames",
                "skim_min",
                "focus_max",
                "turn",
                "turns",
                "relation",
            }
        ),
    ),
    # The time relation: asked on the first turn, then its anchor sought, then its window (plan.py).
    **RELATION_TEMPLATES,
    "overview.user": (frozenset(), _TOOL_VARIABLES),
    "skim.user": (frozenset({"query"}), _TOOL_VARIABLES),
    "focus.user": (frozenset({"query"}), _TOOL_VARIABLES),
    "answer.user": (
        frozenset({"question", "history"}),
        frozenset({"choices", "duration", "evidence", "format", "subtitles", "relation"}),
    ),
}
"""The prompt templates this agent uses (``agents/videoseek/prompts/default/``), with their variables."""


def build_graph(checkpointer: BaseCheckpointSaver[Any] | None = None) -> Any:
    """Compile the VideoSeek graph (the tool loop: the planner, its tools, the answer)."""
    return build_tool_loop(SeekState, SeekOutput, ("plan", plan), ("look", look), answer, checkpointer)
