"""The Video-RLM Master graph.

START -> extract_search_task and choose_traversal (side by side: both read only the question) ->
global_probe -> (one ``worker`` task per target, sent with ``Send``) -> merge -> analyze_uncertainty ->
global_probe (next round) or decide -> END.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

from videoatlas.agents.video_rlm.nodes.analyze_uncertainty import analyze_uncertainty
from videoatlas.agents.video_rlm.nodes.choose_traversal import choose_traversal
from videoatlas.agents.video_rlm.nodes.decide import decide
from videoatlas.agents.video_rlm.nodes.extract_search_task import extract_search_task
from videoatlas.agents.video_rlm.nodes.global_probe import global_probe
from videoatlas.agents.video_rlm.nodes.merge import merge
from videoatlas.agents.video_rlm.schemas import ACTIONS
from videoatlas.agents.video_rlm.state.master import MasterInput, MasterOutput, MasterState
from videoatlas.agents.video_rlm.worker import build_worker_graph
from videoatlas.prompts import TemplateSpec
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.tracing import traced

AGENT_NAME = "video-rlm"
TEMPLATES: TemplateSpec = {
    # One system prompt for every Master call and one for every Worker call: calls that show the
    # same images then share their whole prefix, which a server's prefix cache reuses.
    "master.system": (frozenset(), frozenset({"k"})),
    "worker.system": (frozenset(), frozenset({"k"})),
    "search_task.user": (frozenset({"question"}), frozenset({"choices"})),
    "traversal.user": (frozenset({"question"}), frozenset({"choices"})),
    "probe.user": (
        frozenset({"question", "n"}),
        frozenset({"choices", "search_task", "cells", "hints", "evidence", "progress", "k", "duration", "subtitles"}),
    ),
    "worker.user": (
        frozenset({"question", "actions"}),
        frozenset(
            {
                "choices",
                "search_task",
                "start",
                "end",
                "pct",
                "duration",
                "depth",
                "k",
                "cells",
                "previous",
                "collected",
                "subtitles",
                "zoom",
            }
        ),
    ),
    "uncertainty.user": (
        frozenset({"question"}),
        frozenset(
            {
                "choices",
                "search_task",
                "evidence",
                "occurrences",
                "progress",
                "cells",
                "gaps",
                "n",
                "max_range",
                "anchor_request",
            }
        ),
    ),
    "decide.user": (
        frozenset({"question", "evidence"}),
        frozenset({"choices", "format", "search_task", "coverage", "occurrences", "relation", "speech"}),
    ),
    # Semantic anchors (``anchors``): what a picked frame and a relevance mark mean, put before a grid's cells.
    "anchor_frames.note": (frozenset(), frozenset()),
    "anchor_marks.note": (frozenset(), frozenset()),
    # A relation's anchor (right after, just before, ...): asked for in the uncertainty analysis until found.
    "relation_anchor.note": (frozenset(), frozenset()),
    # The relation as the search task says it (between two anchors, with or without the second; beside one).
    "task_between.note": (frozenset({"anchor", "other"}), frozenset()),
    "task_between_open.note": (frozenset({"anchor"}), frozenset()),
    "task_side.note": (frozenset({"kind", "anchor"}), frozenset({"side"})),
    # What a worker is told of the close-up it asked for (ZOOM), beside its grid.
    "zoom.note": (frozenset({"time"}), frozenset()),
    # What each action a worker may take does: one line per action it is offered this step.
    **{f"action_{action.lower()}.note": (frozenset(), frozenset()) for action in ACTIONS},
}
"""The prompt templates this agent uses (``agents/video_rlm/prompts/default/``), with their variables."""
LATER_NOTES = frozenset(
    {
        "task_between.note",
        "task_between_open.note",
        "task_side.note",
        "zoom.note",
        *(f"action_{action.lower()}.note" for action in ACTIONS),
    }
)
"""The search task's relation notes, the zoom note and the actions' lines: a set written before they were
templates takes the default's."""


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
