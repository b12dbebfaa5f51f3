"""The agents a run can use, by name: each a compiled graph over the same environment and client."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import StateSnapshot

from videoatlas.errors import BadInputError
from videoatlas.graph import uniform, video_rlm
from videoatlas.persistence.checkpoint import open_checkpointer
from videoatlas.prompts import TEMPLATE_SPEC


@dataclass(frozen=True, slots=True)
class Agent:
    """A graph builder and the prompt templates its answers depend on."""

    name: str
    build: Callable[[BaseCheckpointSaver[Any] | None], Any]
    templates: tuple[str, ...]


AGENTS: dict[str, Agent] = {
    video_rlm.AGENT_NAME: Agent(
        video_rlm.AGENT_NAME,
        video_rlm.build_graph,
        tuple(name for name in TEMPLATE_SPEC if name != "uniform.user"),
    ),
    uniform.AGENT_NAME: Agent(uniform.AGENT_NAME, uniform.build_uniform_graph, uniform.TEMPLATES),
}


def get_agent(name: str) -> Agent:
    """The agent called ``name``, or a clear error listing the known ones."""
    try:
        return AGENTS[name]
    except KeyError:
        raise BadInputError(f"unknown agent {name!r}; choose one of {', '.join(AGENTS)}") from None


async def saved_snapshot(url: str, agent: str, run_id: str) -> StateSnapshot:
    """The last checkpointed state of run ``run_id`` (a thread of ``agent``'s graph) in database ``url``."""
    async with open_checkpointer(url) as saver:
        snapshot: StateSnapshot = (
            await get_agent(agent).build(saver).aget_state({"configurable": {"thread_id": run_id}})
        )
    return snapshot
