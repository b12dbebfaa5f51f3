"""The agent as the registry knows it: its graph, templates, package, settings, and how its runs read back.

Its answers depend on every agent it may run (the uniform pass, and whichever search agent a setting names),
so its code version covers all of them.
"""

from __future__ import annotations

from videoatlas.agents.base import Agent
from videoatlas.agents.escalate import views
from videoatlas.agents.escalate.graph import AGENT_NAME, TEMPLATES, build_escalate_graph
from videoatlas.agents.escalate.passes import AGENTS
from videoatlas.agents.escalate.settings import Settings
from videoatlas.agents.views import AgentViews


def _passes_sources() -> tuple[str, ...]:
    return tuple(dict.fromkeys(s for agent in AGENTS.values() for s in (agent.package, *agent.extra_sources)))


AGENT = Agent(
    AGENT_NAME,
    build_escalate_graph,
    TEMPLATES,
    "videoatlas.agents.escalate",
    Settings,
    views=AgentViews(describe_event=views.describe_event, extras=views.extras),
    extra_sources=_passes_sources(),
)
