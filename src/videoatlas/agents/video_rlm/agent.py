"""The agent as the registry knows it: its graph, templates, package and settings."""

from __future__ import annotations

from videoatlas.agents.base import Agent
from videoatlas.agents.video_rlm import trace
from videoatlas.agents.video_rlm.graph import AGENT_NAME, TEMPLATES, build_graph
from videoatlas.agents.video_rlm.settings import Settings

AGENT = Agent(
    AGENT_NAME,
    build_graph,
    TEMPLATES,
    "videoatlas.agents.video_rlm",
    Settings,
    trace.detail,
    trace.lines,
    roles=Settings.thinking_roles,
)
