"""One agent's graph run as a pass of this one: its own settings and prompts, the run's video, client and budget.

A pass is a subgraph invoked inside a node: LangGraph checkpoints it under that node's task, so a resumed
run goes on inside the pass where it stopped (a finished uniform pass is never asked again). It runs with a
context of its own, because an agent's nodes read their own settings and templates from the context; what
the run shares (the video, the model client, the tracer, the budget) is the parent's.
"""

from __future__ import annotations

import asyncio
from typing import Any

from videoatlas.agents.base import Agent
from videoatlas.agents.eea.agent import AGENT as EEA
from videoatlas.agents.uniform.agent import AGENT as UNIFORM
from videoatlas.agents.video_rlm.agent import AGENT as VIDEO_RLM
from videoatlas.agents.videoarm.agent import AGENT as VIDEOARM
from videoatlas.agents.videoseek.agent import AGENT as VIDEOSEEK
from videoatlas.runtime.context import AgentContext

AGENTS: dict[str, Agent] = {agent.name: agent for agent in (VIDEO_RLM, VIDEOSEEK, EEA, VIDEOARM, UNIFORM)}
"""The agents a pass can run, by name (imported: the registry loads this agent, so it does not load the registry;
:data:`videoatlas.agents.escalate.settings.SEARCH_SETTINGS` names the same ones)."""


async def pass_context(ctx: AgentContext, agent: str, settings: dict[str, Any]) -> AgentContext:
    """The context ``agent`` runs in as a pass of this run: its settings and its prompt set of the run's name.

    The budget ledger is the run's, so ``--call-budget`` and ``--token-budget`` hold for both passes together.
    """
    config = ctx.config.model_copy(update={"agent": agent, "settings": settings})
    prompts = await asyncio.to_thread(AGENTS[agent].load_prompts, config.prompts)
    child = AgentContext(
        atlas=ctx.atlas,
        vlm=ctx.vlm,
        prompts=prompts,
        config=config,
        subtitles=ctx.subtitles,
        speech=ctx.speech,
        tracer=ctx.tracer,
        settings=AGENTS[agent].settings.model_validate(settings),
    )
    child.ledger = ctx.ledger
    return child


async def run_pass(ctx: AgentContext, agent: str, settings: dict[str, Any], question: str, choices: list[str]) -> Any:
    """``agent``'s answer to the question: its graph's output, run as a subgraph of the calling node."""
    child = await pass_context(ctx, agent, settings)
    graph = AGENTS[agent].build(None)  # None: the run's checkpointer, under this node's task
    return await graph.ainvoke({"question": question, "choices": choices}, context=child)
