"""Escalation as a graph: START -> look_uniformly -> (END | hand_over -> END).

The uniform baseline answers first; only an answer less sure than ``--escalate-below`` (or one without a
probability) goes to the search agent (``--escalate-to``), whose answer then is the run's. Each pass is the
other agent's own graph run as a subgraph (:mod:`.passes`), checkpointed with this run.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from videoatlas.agents.escalate.hand_over import hand_over
from videoatlas.agents.escalate.look import look_uniformly
from videoatlas.agents.escalate.settings import AGENT_NAME
from videoatlas.agents.escalate.state import EscalateOutput, EscalateState
from videoatlas.prompts import TemplateSpec
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.tracing import traced
from videoatlas.state.run import QuestionInput

__all__ = ["AGENT_NAME", "TEMPLATES", "build_escalate_graph"]

TEMPLATES: TemplateSpec = {
    "handover.note": (frozenset({"question", "moments"}), frozenset({"frames"})),
    "handover_blind.note": (frozenset({"question"}), frozenset({"frames"})),
}
"""This agent's own templates (``agents/escalate/prompts/default/``): the question as the search agent is given
it. Each pass loads its own agent's prompt set of the run's name (``--prompts``)."""


def after_look(state: EscalateState) -> Literal["hand_over", "__end__"]:
    """Hand over when the uniform pass said so; a kept answer ends the run."""
    return "hand_over" if state["escalated"] else "__end__"


def build_escalate_graph(checkpointer: BaseCheckpointSaver[Any] | None = None) -> Any:
    """Compile the escalation graph."""
    builder = StateGraph(
        EscalateState, input_schema=QuestionInput, output_schema=EscalateOutput, context_schema=AgentContext
    )
    builder.add_node("look_uniformly", traced("look_uniformly", look_uniformly))
    builder.add_node("hand_over", traced("hand_over", hand_over))
    builder.add_edge(START, "look_uniformly")
    builder.add_conditional_edges("look_uniformly", after_look, ["hand_over", END])
    builder.add_edge("hand_over", END)
    return builder.compile(checkpointer=checkpointer)
