"""The agent as the registry knows it: its graph, templates, package, settings, and how its runs read back."""

from __future__ import annotations

from videoatlas.agents.base import Agent
from videoatlas.agents.relation import RELATION_NOTES
from videoatlas.agents.videoarm import trace
from videoatlas.agents.videoarm.graph import AGENT_NAME, TEMPLATES, build_graph
from videoatlas.agents.videoarm.settings import Settings
from videoatlas.agents.views import AgentViews

AGENT = Agent(
    AGENT_NAME,
    build_graph,
    TEMPLATES,
    "videoatlas.agents.videoarm",
    Settings,
    views=AgentViews.of(
        trace,
        describe_event=trace.describe_event,
        decision_node="answer",
    ),
    defaulted_templates=RELATION_NOTES,
)
