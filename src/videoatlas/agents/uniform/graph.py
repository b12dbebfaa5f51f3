"""The uniform-sampling baseline as a graph: START -> answer_uniform -> END.

The reference row of every long-video paper's table: the same backbone, the same rendering, one
call over evenly spaced frames. Being a graph, it is run, checkpointed and traced like Video-RLM.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from videoatlas.agents.uniform.answer import answer_uniform
from videoatlas.agents.uniform.state import UniformState
from videoatlas.prompts import TemplateSpec
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.tracing import traced
from videoatlas.state.run import AnswerOutput, QuestionInput

AGENT_NAME = "uniform"
TEMPLATES: TemplateSpec = {
    "system": (frozenset(), frozenset({"k"})),
    "answer.user": (
        frozenset({"question"}),
        frozenset({"choices", "format", "frames", "sheets", "k", "duration", "subtitles"}),
    ),
}
"""The prompt templates this agent uses (``agents/uniform/prompts/default/``), with their variables."""


def build_uniform_graph(checkpointer: BaseCheckpointSaver[Any] | None = None) -> Any:
    """Compile the baseline graph."""
    builder = StateGraph(
        UniformState, input_schema=QuestionInput, output_schema=AnswerOutput, context_schema=AgentContext
    )
    builder.add_node("answer_uniform", traced("answer_uniform", answer_uniform))
    builder.add_edge(START, "answer_uniform")
    builder.add_edge("answer_uniform", END)
    return builder.compile(checkpointer=checkpointer)
