"""The agent as the registry knows it: its graph, templates, package, settings, and how its runs read back."""

from __future__ import annotations

from videoatlas.agents import decision
from videoatlas.agents.base import Agent
from videoatlas.agents.uniform.graph import AGENT_NAME, TEMPLATES, build_uniform_graph
from videoatlas.agents.uniform.settings import Settings
from videoatlas.agents.views import AgentViews

AGENT = Agent(
    AGENT_NAME,
    build_uniform_graph,
    TEMPLATES,
    "videoatlas.agents.uniform",
    Settings,
    views=AgentViews(describe_event=decision.describe_event),
)
