"""Video-RLM's own settings: workers, rounds, traversal, depth, step budgets, BFS width."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal

from pydantic import Field, field_validator

from videoatlas import limits
from videoatlas.environment.geometry import auto_max_depth
from videoatlas.errors import BadInputError
from videoatlas.runtime.config import StopsOnConfidence, settings_reader

if TYPE_CHECKING:
    from videoatlas.runtime.config import RunConfig
    from videoatlas.runtime.context import AgentContext


FINEST_BFS_STEP_S = 1.0
"""The finest step a BFS scan picks by itself (a smaller ``bfs_resolution_s`` still sets a finer one): about the
span of the cells of the deepest level ``max_depth="auto"`` opens."""


class VideoRLMSettings(StopsOnConfidence):
    """How Video-RLM searches."""

    thinking_roles: ClassVar[tuple[str, ...]] = ("master", "worker")

    workers: int = Field(default=4, ge=1, le=32)
    """Workers exploring at once; a DFS round assigns this many cells (top-N of the global probe)."""
    traversal: Literal["auto", "bfs", "dfs"] = "auto"
    """BFS (many moments: counts, order), DFS (one localized detail), or auto: chosen from the question."""
    max_depth: int | Literal["auto"] = "auto"
    """Deepest grid level workers may open; auto: the first level whose cells are shorter than 1 s."""
    rounds: int = Field(default=4, ge=1, le=100)
    """Exploration rounds at most."""
    dfs_steps: int = Field(default=6, ge=1, le=50)
    """Steps per DFS worker."""
    bfs_steps: int = Field(default=1, ge=1, le=50)
    """Steps per BFS worker (the paper's BFS workers scan one level: one step)."""
    bfs_cells: Annotated[int, Field(ge=1, le=64)] | Literal["auto"] = "auto"
    """Cells a BFS round assigns per worker, each to its own one-step worker (``workers`` of them run at
    once). ``auto`` paces the scan to the budget: the root cells not yet searched are spread over the
    rounds left, so a BFS question (a count, an order) has looked at every root cell by its last round
    (4 workers, 4 rounds, an 8x8 grid: 4 cells per worker a round), and a round that settles it still
    ends the search early. A number fixes the width: 1 is the paper's setting, under which a count at
    the default budget sees a quarter of the video."""
    bfs_resolution_s: float = Field(default=16.0, ge=0)
    """The coarsest step a BFS question (a count, an order, a first or last) covers the whole timeline at, in
    seconds between frames; it covers it finer, down to 1 s, when one round of ``workers`` grids can:
    each round sends workers to ranges not yet seen that finely, each range as long as one grid shows at that
    step, before any other target. Something on screen for at least that step cannot fall between two frames;
    shorter things may. Also the coarsest step a DFS sweep (``sweep_on_miss``) covers at. 0: off (BFS rounds
    take root cells by the probe's ranking)."""
    sweep_on_miss: bool = True
    """A DFS question whose rounds have found nothing yet sweeps next: the rounds after an empty one send
    workers to the stretches not yet seen at the sweep's step (:meth:`sweep_step`: the finest the rounds left
    afford, at most ``bfs_resolution_s``; ranges one grid each, as a BFS question's first rounds do) instead of
    opening root cells one by one in the probe's order, when the root grid's frames are further apart than
    ``bfs_resolution_s`` and the rounds left cannot open every root cell left (``workers`` a round). A thing
    shorter than a root cell falls between the root grid's frames; a worker that opens one root cell sees
    1/K^2 of the video, a sweep range ``step * K^2`` seconds, more coarsely. The first evidence ends the sweep.
    Off: every DFS round takes root cells by the probe's ranking (the paper's setting)."""
    min_expand_span_s: float = Field(default=1.0, gt=0)
    """EXPAND is not offered on cells shorter than this (seconds)."""
    virtual_loss: float = Field(default=64.0, ge=0)
    """Rank penalty per earlier assignment of a cell; the default (K^2 positions for K=8) puts cells
    already assigned behind every cell not yet assigned, while keeping the model's order among each."""
    scratchpad_page: int = Field(default=16, ge=1, le=64)
    """Evidence tiles per scratchpad page."""
    anchors: Literal["off", "frames", "marks", "both"] = "off"
    """Semantic anchors in the upper grid levels, from a frame embedding index scored against the search task
    (see agents/video_rlm/anchors.py): frames (a cell shows its best-matching frame), marks (a relevance mark per
    cell), both, or off. The index is built through the endpoint's /v1/embeddings once per video and reused."""
    anchor_min: float = Field(default=0.6, ge=0.0, le=1.0)
    """Score (0-1, rescaled over the index) a cell's best frame needs to be shown in place of its fixed frame."""
    anchor_depth: int = Field(default=1, ge=0, le=12)
    """Deepest grid level that gets anchors (0: the root grid only; 1: it and its cells' grids)."""
    index_fps: float = Field(default=1.0, gt=0.0, le=30.0)
    """Frames per second of video the embedding index holds; lowered to fit index_cap."""
    index_cap: int = Field(default=4000, ge=1, le=100_000)
    """Frames the index holds at most: a longer video is indexed at index_cap / duration frames per second."""
    index_px: int = Field(default=448, ge=64, le=2048)
    """Long side of a frame sent to the embedding model, in pixels."""
    embedding_model: str = ""
    """The embedding model on the embeddings endpoint (empty: the chat model's id, for a server that serves both)."""
    query_prefix: str = "query: "
    """Put before the search task sent to the embedding model (E5 models expect ``query: ``)."""

    @field_validator("max_depth", mode="before")
    @classmethod
    def _depth(cls, value: object) -> object:
        if isinstance(value, str) and value != "auto":
            if not value.isdigit():
                raise ValueError("max depth must be 'auto' or a whole number")
            return int(value)
        return value

    @property
    def parallel(self) -> int:
        """At most ``workers`` worker tasks in flight."""
        return self.workers

    def check_images(self, config: RunConfig, max_pixels: int) -> None:
        """Its root grid and every worker's view are the K x K grid of ``cell_px`` cells: one too large is refused."""
        limits.check_image_fits(config.k, config.cell_px, max_pixels)

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

    def bfs_step(self, duration: float, k: int) -> float:
        """The step (seconds between frames) a BFS question covers the timeline at; 0 when coverage is off.

        The finest step at which one round of ``workers`` grids of K x K frames shows the whole video,
        never coarser than ``bfs_resolution_s`` and, by itself, never finer than :data:`FINEST_BFS_STEP_S`:
        a 10-minute video at K=8 with 4 workers is covered at 2.3 s (four grids), a 1-hour one at 14 s, a
        3-hour one at the 16 s default. How long the things counted stay on screen is not known in advance;
        this spends one round on the finest look the run's width affords rather than a fixed step.
        """
        if self.bfs_resolution_s <= 0:
            return 0.0
        afforded = duration / max(1, self.workers * k * k)
        return min(self.bfs_resolution_s, max(FINEST_BFS_STEP_S, afforded))

    def sweep_step(self, duration: float, k: int, rounds_left: int) -> float:
        """The step a DFS sweep covers the timeline at: the finest the ``rounds_left`` rounds afford.

        ``workers`` grids of K x K frames a round, never coarser than ``bfs_resolution_s`` nor finer than
        :data:`FINEST_BFS_STEP_S`. An hour at K=8 with 4 workers and three rounds left is swept at 4.7 s;
        the step coarsens as rounds pass (7.0 s with two left, 14 s with one), so the last round still
        reaches what is left, and what was swept finely counts as seen at every coarser step. A sweep of
        the whole hour in one round (14 s apart) misses something on screen for 5 s about two times in three.
        """
        afforded = duration / max(1, self.workers * k * k * max(1, rounds_left))
        return min(self.bfs_resolution_s, max(FINEST_BFS_STEP_S, afforded))

    def coverage_step(self, traversal: str, duration: float, k: int, rounds_left: int = 1) -> float:
        """The step coverage is counted at: :meth:`bfs_step` (BFS), :meth:`sweep_step` (a DFS sweep)."""
        return self.bfs_step(duration, k) if traversal == "bfs" else self.sweep_step(duration, k, rounds_left)

    def resolved_max_depth(self, duration: float, k: int) -> int:
        """The deepest grid level workers may reach."""
        if self.max_depth == "auto":
            return auto_max_depth(duration, k)
        if self.max_depth < 0:
            raise BadInputError("max depth must be >= 0")
        return self.max_depth


rlm = settings_reader(VideoRLMSettings)
"""The run's Video-RLM settings."""


def max_depth(ctx: AgentContext) -> int:
    """The resolved maximum depth for this video."""
    return rlm(ctx).resolved_max_depth(ctx.atlas.duration, ctx.config.k)


Settings = VideoRLMSettings
"""The name every agent's settings module gives its settings model."""
