"""The worker subgraph: observe -> decide -> act, looping until FINISHED or a budget stops it."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from videoatlas.agents.video_rlm.nodes.worker_act import act
from videoatlas.agents.video_rlm.nodes.worker_decide import decide_step
from videoatlas.agents.video_rlm.nodes.worker_finish import finish
from videoatlas.agents.video_rlm.nodes.worker_observe import observe
from videoatlas.agents.video_rlm.state.worker import WorkerInput, WorkerOutput, WorkerState
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.tracing import traced


def _after_observe(state: WorkerState) -> str:
    return "finish" if state.get("stop") else "decide"


def _after_decide(state: WorkerState) -> str:
    return "finish" if state.get("stop") else "act"


def _after_act(state: WorkerState) -> str:
    return "finish" if state.get("stop") else "observe"


def build_worker_graph() -> Any:
    """Compile the worker; it inherits the parent's checkpointer (compiled without one)."""
    builder = StateGraph(WorkerState, input_schema=WorkerInput, output_schema=WorkerOutput, context_schema=AgentContext)
    builder.add_node("observe", traced("observe", observe))
    builder.add_node("decide", traced("decide", decide_step))
    builder.add_node("act", traced("act", act))
    builder.add_node("finish", traced("finish", finish))
    builder.add_edge(START, "observe")
    builder.add_conditional_edges("observe", _after_observe, ["decide", "finish"])
    builder.add_conditional_edges("decide", _after_decide, ["act", "finish"])
    builder.add_conditional_edges("act", _after_act, ["observe", "finish"])
    builder.add_edge("finish", END)
    return builder.compile()
