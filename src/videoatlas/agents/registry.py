"""The agents a run can use, by name, loaded when first asked for.

Adding an agent means adding its package under ``agents/`` (``agent.py`` with ``AGENT``,
``settings.py`` with ``Settings``) and one line here; nothing else in the project (runs, traces,
reports, evals, the CLI) names an agent. Settings load without the agent's graph, so listing the
agents and their options stays cheap (this module imports neither pydantic nor an agent until asked).
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from videoatlas import defaults
from videoatlas.errors import BadInputError

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from videoatlas.agents.base import Agent
    from videoatlas.runtime.config import AgentSettings, RunConfig

PACKAGES: dict[str, str] = {
    "video-rlm": "videoatlas.agents.video_rlm",
    "uniform": "videoatlas.agents.uniform",
    "videoseek": "videoatlas.agents.videoseek",
    "eea": "videoatlas.agents.eea",
    "videoarm": "videoatlas.agents.videoarm",
    "escalate": "videoatlas.agents.escalate",
}
"""Agent name -> its package."""

DEFAULT_AGENT = defaults.DEFAULT_AGENT
"""The agent a run uses when none is named (``RunConfig``'s default, too low a layer to import this one)."""


def agent_names() -> list[str]:
    """The agents a run can use."""
    return list(PACKAGES)


def _package(name: str) -> str:
    try:
        return PACKAGES[name]
    except KeyError:
        raise BadInputError(f"unknown agent {name!r}; choose one of {', '.join(PACKAGES)}") from None


def get_agent(name: str) -> Agent:
    """The agent called ``name``, or a clear error listing the known ones."""
    agent: Agent = importlib.import_module(f"{_package(name)}.agent").AGENT
    return agent


def all_agents() -> dict[str, Agent]:
    """Every agent, by name (imports each one's graph)."""
    return {name: get_agent(name) for name in PACKAGES}


def check_prompts(name: str, prompts: str) -> None:
    """Refuse a prompt set the agent does not have, without loading the agent (its graph and LangGraph)."""
    from importlib import resources

    from videoatlas.prompts import check_prompt_source

    check_prompt_source(prompts, resources.files(_package(name)).joinpath("prompts"))


def settings_model(name: str) -> type[AgentSettings]:
    """An agent's settings model (without loading its graph)."""
    model: type[AgentSettings] = importlib.import_module(f"{_package(name)}.settings").Settings
    return model


def settings_of(config: RunConfig) -> AgentSettings:
    """The settings of the configured agent (one line naming the setting when one is bad)."""
    from pydantic import ValidationError

    try:
        return settings_model(config.agent).model_validate(config.settings)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = str(first["loc"][0]) if first["loc"] else "settings"
        raise BadInputError(f"{config.agent} setting {where}: {first['msg']}") from None


def check_images(config: RunConfig, max_pixels: int) -> None:
    """Refuse, before a run starts, pictures the configured agent would send over the endpoint's ``max_pixels``.

    The agent's own check (:meth:`~videoatlas.runtime.config.AgentSettings.check_images`): one that renders
    the environment's K x K grid refuses a grid too large; one that never renders it is not held to it.
    Its settings only are loaded, not its graph.
    """
    settings_of(config).check_images(config, max_pixels)


def knobs(config: RunConfig) -> dict[str, Any]:
    """What can change the configured agent's answers: shared knobs and all its settings (defaults filled in).

    The prompt set is left out: what matters is the text of its templates, which a result key
    carries as a hash, not where the set lives. Concurrency changes when, not what, it answers; the
    speech server's address changes where, not what, it hears (its model is kept).
    """
    shared = {"agent", "k", "cell_px", "token_budget", "call_budget", "speech", "speech_model"}
    out = {**{k: v for k, v in config.model_dump().items() if k in shared}, **settings_of(config).model_dump()}
    roles = settings_model(config.agent).thinking_roles
    thinking = {role: config.thinking_for(role) for role in roles}
    if any(value is not None for value in thinking.values()):  # left out when unset: older keys stay valid
        out["thinking"] = thinking
    return out


def check_thinking(config: RunConfig) -> None:
    """Refuse a thinking setting naming a role no agent has (a typo would otherwise be silently ignored).

    A role of another agent is allowed (one setting can serve runs of several agents) and means nothing here.
    """
    from videoatlas.runtime.config import ALL_ROLES

    known = {role for name in PACKAGES for role in settings_model(name).thinking_roles}
    unknown = sorted(set(config.thinking) - known - {ALL_ROLES})
    if unknown:
        raise BadInputError(
            f"thinking setting: unknown role(s) {', '.join(unknown)}; roles: {', '.join(sorted(known))} (or all)"
        )


async def saved_snapshot(url: str, agent: str, run_id: str) -> StateSnapshot:
    """The last checkpointed state of run ``run_id`` (a thread of ``agent``'s graph) in database ``url``."""
    from videoatlas.persistence.checkpoint import open_checkpointer

    graph_of = get_agent(agent).build
    all_agents()  # first: the (shared) serializer allows the state records every agent defines
    async with open_checkpointer(url) as saver:
        snapshot: StateSnapshot = await graph_of(saver).aget_state({"configurable": {"thread_id": run_id}})
    return snapshot


async def state_history(url: str, agent: str, run_id: str) -> AsyncGenerator[StateSnapshot]:
    """Every checkpointed state of run ``run_id`` in database ``url``, newest first."""
    from videoatlas.persistence.checkpoint import open_checkpointer

    graph_of = get_agent(agent).build
    all_agents()  # as in saved_snapshot: the serializer must know every agent's state records
    async with open_checkpointer(url) as saver:
        async for snapshot in graph_of(saver).aget_state_history({"configurable": {"thread_id": run_id}}):
            yield snapshot


def describe_event(event: dict[str, Any]) -> str | None:
    """A progress line for an event an agent's nodes sent (None: no agent has a line for it).

    An event does not say which agent sent it; each agent's hook answers for its own events, in
    the order of :data:`PACKAGES`.
    """
    for agent in all_agents().values():
        line = agent.views.describe_event(event) if agent.views.describe_event is not None else None
        if line is not None:
            return line
    return None
