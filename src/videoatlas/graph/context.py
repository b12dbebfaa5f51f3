"""The runtime context: everything non-serialisable a node needs (environment, model client, prompts).

It travels through LangGraph's runtime, never through state, so it is not checkpointed; a resumed
run rebuilds it from the stored :class:`RunConfig`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.geometry import auto_max_depth
from videoatlas.environment.subtitles import Subtitles
from videoatlas.errors import BadInputError
from videoatlas.graph.budget import BudgetLedger
from videoatlas.llm.client import VLMClient
from videoatlas.prompts import PromptSet

AgentName = Literal["video-rlm", "uniform"]


class RunConfig(BaseModel):
    """Every knob of a run (stored with the run, so it can be resumed and compared)."""

    agent: AgentName = "video-rlm"
    """Which graph answers: the Video-RLM agent, or the uniform-sampling baseline."""
    frames: int = Field(default=64, ge=1, le=1024)
    """Uniform baseline only: frames sampled, rounded up to whole K x K sheets."""

    k: int = Field(default=8, ge=2, le=16)
    cell_px: int = Field(default=320, ge=32, le=1024)
    workers: int = Field(default=4, ge=1, le=32)
    """Workers exploring at once; a DFS round assigns this many cells (top-N of the global probe)."""
    traversal: Literal["auto", "bfs", "dfs"] = "auto"
    max_depth: int | Literal["auto"] = "auto"
    rounds: int = Field(default=4, ge=1, le=100)
    token_budget: int | None = Field(default=None, ge=1)
    call_budget: int | None = Field(default=None, ge=1)
    dfs_steps: int = Field(default=6, ge=1, le=50)
    bfs_steps: int = Field(default=1, ge=1, le=50)
    bfs_cells: Annotated[int, Field(ge=1, le=64)] | Literal["auto"] = "auto"
    """Cells a BFS round assigns per worker, each to its own one-step worker (``workers`` of them run at
    once). ``auto`` paces the scan to the budget: the root cells not yet searched are spread over the
    rounds left, so a BFS question (a count, an order) has looked at every root cell by its last round
    (4 workers, 4 rounds, an 8x8 grid: 4 cells per worker a round), and a round that settles it still
    ends the search early. A number fixes the width: 1 is the paper's setting, under which a count at
    the default budget sees a quarter of the video."""
    min_expand_span_s: float = Field(default=1.0, gt=0)
    """EXPAND is not offered on cells shorter than this."""
    virtual_loss: float = Field(default=64.0, ge=0)
    """Rank penalty per earlier assignment of a cell; the default (K^2 positions for K=8) puts cells
    already assigned behind every cell not yet assigned, while keeping the model's order among each."""
    scratchpad_page: int = Field(default=16, ge=1, le=64)
    prompts: str = "default"
    max_concurrency: int = Field(default=8, ge=1, le=64)
    """Top-level LangGraph concurrency: worker tasks running at once (never more than ``workers``)."""

    @field_validator("max_depth", mode="before")
    @classmethod
    def _depth(cls, value: object) -> object:
        if isinstance(value, str) and value != "auto":
            if not value.isdigit():
                raise ValueError("max depth must be 'auto' or a whole number")
            return int(value)
        return value

    def agent_knobs(self) -> dict[str, object]:
        """The settings that can change this agent's answer (what a result cache is keyed by).

        The prompt set is left out: what matters is the text of the templates the agent uses,
        which the cache key carries as a hash, not where the set lives.
        """
        shown = {"agent", "k", "cell_px"}
        if self.agent == "uniform":
            shown |= {"frames"}
        else:
            shown |= set(type(self).model_fields) - {"frames", "max_concurrency", "prompts"}
        return {k: v for k, v in self.model_dump().items() if k in shown}

    def round_width(self, traversal: str, unsearched: int = 0, rounds_left: int = 1) -> int:
        """Cells one round assigns: ``workers`` for DFS; for BFS ``workers`` times the cells per worker.

        With ``bfs_cells="auto"`` that is the ``unsearched`` root cells shared over the ``rounds_left``
        rounds (this one included), at least one per worker.
        """
        if traversal != "bfs":
            return self.workers
        if self.bfs_cells == "auto":
            per_worker = max(1, math.ceil(unsearched / (self.workers * max(1, rounds_left))))
        else:
            per_worker = self.bfs_cells
        return self.workers * per_worker

    @property
    def task_concurrency(self) -> int:
        """LangGraph's ``max_concurrency`` for a run: at most ``workers`` worker tasks in flight."""
        return min(self.max_concurrency, self.workers)

    def resolved_max_depth(self, duration: float) -> int:
        """The deepest grid level workers may reach."""
        if self.max_depth == "auto":
            return auto_max_depth(duration, self.k)
        if self.max_depth < 0:
            raise BadInputError("max depth must be >= 0")
        return self.max_depth


@dataclass
class AgentContext:
    """Dependencies of every node, passed as LangGraph's runtime context."""

    atlas: VideoAtlas
    vlm: VLMClient
    prompts: PromptSet
    config: RunConfig
    subtitles: Subtitles | None = None
    tracer: Any = None
    """A :class:`~videoatlas.graph.tracing.RunTracer` when the run is traced, else None."""
    ledger: BudgetLedger = field(init=False)
    """The token and call budget shared by the calls in flight (see :mod:`videoatlas.graph.budget`)."""

    def __post_init__(self) -> None:
        self.ledger = BudgetLedger(self.config.token_budget, self.config.call_budget)

    @property
    def max_depth(self) -> int:
        """The resolved maximum depth for this video."""
        return self.config.resolved_max_depth(self.atlas.duration)
