"""The Video-RLM Master graph.

START -> extract_search_task and choose_traversal (side by side: both read only the question) ->
global_probe -> (one ``worker`` task per target, sent with ``Send``) -> merge -> analyze_uncertainty ->
global_probe (next round) or decide -> END.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from videoatlas.graph.context import AgentContext
from videoatlas.graph.tracing import traced
from videoatlas.graph.worker import build_worker_graph
from videoatlas.nodes.analyze_uncertainty import analyze_uncertainty
from videoatlas.nodes.choose_traversal import choose_traversal
from videoatlas.nodes.decide import decide
from videoatlas.nodes.extract_search_task import extract_search_task
from videoatlas.nodes.global_probe import global_probe
from videoatlas.nodes.merge import merge
from videoatlas.state.master import MasterInput, MasterOutput, MasterState

AGENT_NAME = "video-rlm"


def build_graph(checkpointer: BaseCheckpointSaver[Any] | None = None) -> Any:
    """Compile the Master graph (with a checkpointer, runs can be resumed)."""
    builder = StateGraph(MasterState, input_schema=MasterInput, output_schema=MasterOutput, context_schema=AgentContext)
    builder.add_node("extract_search_task", traced("extract_search_task", extract_search_task))
    builder.add_node("choose_traversal", traced("choose_traversal", choose_traversal))
    builder.add_node("global_probe", traced("global_probe", global_probe), destinations=("worker", "decide"))
    builder.add_node("worker", build_worker_graph())
    builder.add_node("merge", traced("merge", merge))
    builder.add_node(
        "analyze_uncertainty",
        traced("analyze_uncertainty", analyze_uncertainty),
        destinations=("global_probe", "decide"),
    )
    builder.add_node("decide", traced("decide", decide))
    builder.add_edge(START, "extract_search_task")
    builder.add_edge(START, "choose_traversal")
    builder.add_edge(["extract_search_task", "choose_traversal"], "global_probe")
    builder.add_edge("worker", "merge")
    builder.add_edge("merge", "analyze_uncertainty")
    builder.add_edge("decide", END)
    return builder.compile(checkpointer=checkpointer)
