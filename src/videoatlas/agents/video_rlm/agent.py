"""The agent as the registry knows it: its graph, templates, package, settings, and how its runs read back."""

from __future__ import annotations

from videoatlas.agents.base import Agent
from videoatlas.agents.video_rlm import page, pictures, progress, trace
from videoatlas.agents.video_rlm.graph import AGENT_NAME, LATER_NOTES, TEMPLATES, build_graph
from videoatlas.agents.video_rlm.history import rounds_after_merge
from videoatlas.agents.video_rlm.settings import Settings
from videoatlas.agents.views import AgentViews

AGENT = Agent(
    AGENT_NAME,
    build_graph,
    TEMPLATES,
    "videoatlas.agents.video_rlm",
    Settings,
    views=AgentViews(
        trace_detail=trace.detail,
        trace_lines=trace.lines,
        page=page.page_view,
        page_template="page.html",
        history=rounds_after_merge,
        describe_event=progress.describe_event,
        decision_node="decide",
        decision_grid=True,
        extras=trace.extras,
        pictures=pictures.pictures,
    ),
    extra_sources=("videoatlas.llm.embeddings", "videoatlas.runtime.frame_index"),
    defaulted_templates=frozenset({"anchor_frames.note", "anchor_marks.note", "relation_anchor.note", *LATER_NOTES}),
)
