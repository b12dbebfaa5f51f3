"""The runtime context: everything non-serialisable a node needs (environment, model client, prompts).

It travels through LangGraph's runtime, never through state, so it is not checkpointed; a resumed
run rebuilds it from the stored :class:`RunConfig`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.subtitles import Subtitles
from videoatlas.llm.client import VLMClient
from videoatlas.prompts import PromptSet
from videoatlas.runtime.budget import BudgetLedger
from videoatlas.runtime.config import AgentSettings, RunConfig
from videoatlas.runtime.speech import Speech

__all__ = ["AgentContext", "AgentSettings", "RunConfig"]


@dataclass
class AgentContext:
    """Dependencies of every node, passed as LangGraph's runtime context."""

    atlas: VideoAtlas
    vlm: VLMClient
    prompts: PromptSet
    config: RunConfig
    subtitles: Subtitles | None = None
    speech: Speech | None = None
    """The video's speech track, heard on demand (None: the run does not listen; see :mod:`.speech`)."""
    tracer: Any = None
    """A :class:`~videoatlas.runtime.tracing.RunTracer` when the run is traced, else None."""
    settings: Any = None
    """The agent's own settings (its :class:`AgentSettings` subclass, validated from ``config.settings``); required:
    the caller passes ``agents.registry.settings_of(config)``, so this layer never imports the agents."""
    ledger: BudgetLedger = field(init=False)
    """The token and call budget shared by the calls in flight (see :mod:`videoatlas.runtime.budget`)."""
    slots: asyncio.Semaphore = field(init=False)
    """Node executions running at once, at most :attr:`task_concurrency` (taken by every traced node).

    Not LangGraph's ``max_concurrency``: its gate leaves the coroutine of a task cancelled while
    waiting for a slot never awaited, and Python then prints a RuntimeWarning on every Ctrl-C or
    SIGTERM that stops a run with tasks queued.
    """

    def __post_init__(self) -> None:
        if self.settings is None:
            raise ValueError("AgentContext needs the agent's settings (agents.registry.settings_of(config))")
        self.ledger = BudgetLedger(self.config.token_budget, self.config.call_budget)
        self.slots = asyncio.Semaphore(self.task_concurrency)

    @property
    def task_concurrency(self) -> int:
        """Node executions at once for a run: never more than the agent runs in parallel."""
        return min(self.config.max_concurrency, int(self.settings.parallel))
