"""The EEA graph: START -> discover -> (evaluate -> update -> select)* -> answer -> END.

``discover`` turns the question into queries and anchors (building or reusing the frame index); each round
``evaluate`` expands the selected segment and scores its children (and proposes queries from what it was shown),
``update`` adds those queries (or asks for them, ``update_call``) and re-anchors, and ``select`` picks the next
segment or answers.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from videoatlas.agents.eea.answer import answer
from videoatlas.agents.eea.discover import discover
from videoatlas.agents.eea.evaluate import evaluate
from videoatlas.agents.eea.select import select
from videoatlas.agents.eea.state import EEAOutput, EEAState
from videoatlas.agents.eea.update import update
from videoatlas.agents.relation import ANCHOR_REQUEST
from videoatlas.prompts import TemplateSpec
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.tracing import traced
from videoatlas.state.run import QuestionInput

AGENT_NAME = "eea"
_ASKED = frozenset({"question", "choices"})
TEMPLATES: TemplateSpec = {
    "system": (frozenset(), frozenset({"k"})),
    "discover.user": (frozenset({"question"}), frozenset({"choices"})),
    "evaluate.user": (
        frozenset({"question", "children"}),
        _ASKED
        | {"duration", "round", "segment", "count", "frames", "history", "opened", "speech", "anchor_request"}
        | {"query_request"},
    ),
    "update.user": (frozenset({"question"}), _ASKED | {"queries", "frames"}),
    # `candidates` gives each stretch's reason; `candidate_scores` leaves it to `history`, which has it.
    "select.user": (
        frozenset({"question"}),
        _ASKED
        | {"duration", "round", "rounds", "memory", "scoring", "opened", "history", "candidates", "candidate_scores"},
    ),
    "answer.user": (
        frozenset({"question"}),
        _ASKED | {"duration", "evidence", "history", "format", "speech", "relation"},
    ),
    # Asked of an expansion while a time relation's anchor is sought (evaluate.py).
    **ANCHOR_REQUEST,
    # Asked of an expansion for the round's new queries, unless the update has a call of its own (evaluate.py).
    "query_request.note": (frozenset({"queries"}), frozenset()),
}
"""The prompt templates this agent uses (``agents/eea/prompts/default/``), with their variables."""


def build_graph(checkpointer: BaseCheckpointSaver[Any] | None = None) -> Any:
    """Compile the EEA graph."""
    builder = StateGraph(EEAState, input_schema=QuestionInput, output_schema=EEAOutput, context_schema=AgentContext)
    builder.add_node("discover", traced("discover", discover))
    builder.add_node("evaluate", traced("evaluate", evaluate))
    builder.add_node("update", traced("update", update))
    builder.add_node("select", traced("select", select), destinations=("evaluate", "answer"))
    builder.add_node("answer", traced("answer", answer))
    builder.add_edge(START, "discover")
    builder.add_edge("discover", "evaluate")
    builder.add_edge("evaluate", "update")
    builder.add_edge("update", "select")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=checkpointer)
