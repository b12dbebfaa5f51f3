"""The agent as the registry knows it: its graph, templates, package, settings, and how its runs read back."""

from __future__ import annotations

from videoatlas.agents import tool_loop
from videoatlas.agents.base import Agent
from videoatlas.agents.relation import RELATION_NOTES
from videoatlas.agents.videoseek import trace
from videoatlas.agents.videoseek.graph import AGENT_NAME, TEMPLATES, build_graph
from videoatlas.agents.videoseek.settings import Settings
from videoatlas.agents.views import AgentViews

AGENT = Agent(
    AGENT_NAME,
    build_graph,
    TEMPLATES,
    "videoatlas.agents.videoseek",
    Settings,
    views=AgentViews.of(
        trace,
        describe_event=tool_loop.describe_event,
        decision_node="answer",
    ),
    defaulted_templates=RELATION_NOTES,
)
