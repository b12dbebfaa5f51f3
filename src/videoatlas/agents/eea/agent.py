"""The agent as the registry knows it: its graph, templates, package, settings, and how its runs read back."""

from __future__ import annotations

from videoatlas.agents.base import Agent
from videoatlas.agents.eea import trace
from videoatlas.agents.eea.graph import AGENT_NAME, TEMPLATES, build_graph
from videoatlas.agents.eea.settings import Settings
from videoatlas.agents.relation import ANCHOR_REQUEST
from videoatlas.agents.views import AgentViews

AGENT = Agent(
    AGENT_NAME,
    build_graph,
    TEMPLATES,
    "videoatlas.agents.eea",
    Settings,
    views=AgentViews.of(
        trace,
        describe_event=trace.describe_event,
        decision_node="answer",
        extras=trace.extras,
    ),
    extra_sources=("videoatlas.llm.embeddings", "videoatlas.runtime.frame_index"),
    defaulted_templates=frozenset(ANCHOR_REQUEST),
)
