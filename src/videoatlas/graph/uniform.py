"""The uniform-sampling baseline as a graph: START -> answer_uniform -> END.

The reference row of every long-video paper's table: the same backbone, the same rendering, one
call over evenly spaced frames. Being a graph, it is run, checkpointed and traced like Video-RLM.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from videoatlas.graph.context import AgentContext
from videoatlas.graph.tracing import traced
from videoatlas.nodes.answer_uniform import answer_uniform
from videoatlas.state.master import MasterInput, MasterOutput
from videoatlas.state.uniform import UniformState

AGENT_NAME = "uniform"
TEMPLATES = ("master.system", "uniform.user", "reask")
"""The prompt templates this agent uses (its results depend on these and no others)."""


def build_uniform_graph(checkpointer: BaseCheckpointSaver[Any] | None = None) -> Any:
    """Compile the baseline graph."""
    builder = StateGraph(
        UniformState, input_schema=MasterInput, output_schema=MasterOutput, context_schema=AgentContext
    )
    builder.add_node("answer_uniform", traced("answer_uniform", answer_uniform))
    builder.add_edge(START, "answer_uniform")
    builder.add_edge("answer_uniform", END)
    return builder.compile(checkpointer=checkpointer)
