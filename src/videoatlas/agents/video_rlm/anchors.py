"""Semantic anchors in the upper grid levels (``anchors``: off, frames, marks, both).

The paper leaves this open (section 5): when the root grid's fixed frames hold nothing that looks like
the search task, the Master spends rounds before it finds the region. With a frame embedding index of
the video (the one EEA uses, built once per video and model and kept in the run store), the search
task is scored against every indexed frame, and the grids of the upper levels change in two ways that
keep every promise of the environment (each cell still shows a frame of its own interval; the
geometry, the dead zones and O(log T) navigation are untouched):

- ``frames``: a cell whose best indexed frame scores at least ``anchor_min`` shows that frame instead
  of its fixed one, and its label says which (``@`` and the frame's time);
- ``marks``: every cell carries its best score as ``rel`` 0-99 in its label and in the cell list the
  Master reads; the Master's ranking falls back on it when its reply cannot be used.

A score is the cosine similarity rescaled over the whole index: 0 at the video's median frame (and
below it), 1 at its most similar frame. Embedding models give every frame of a video much the same
raw similarity to a query (multilingual-e5 puts most of them within a few hundredths); measured from
the median, only the frames that stand out from the rest of the video score high.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from videoatlas.agents.video_rlm.settings import rlm
from videoatlas.environment.atlas import CellPick
from videoatlas.environment.geometry import Cell, CellPath, grid_for_path
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.frame_index import frame_index, query_vectors
from videoatlas.state.models import IndexInfo


@dataclass(frozen=True, slots=True)
class Relevance:
    """The search task's score at every indexed frame: times (seconds) and scores in [0, 1]."""

    times: np.ndarray
    scores: np.ndarray

    @classmethod
    def of(cls, times: np.ndarray, similarities: np.ndarray) -> Relevance:
        """Scores from raw similarities: 0 at the index's median and below, 1 at its best (all equal: all 0)."""
        sims = np.asarray(similarities, np.float64)
        if sims.size == 0:
            return cls(np.asarray(times, np.float64), sims)
        middle, high = float(np.median(sims)), float(np.max(sims))
        spread = high - middle
        scores = (sims - middle) / spread if spread > 1e-9 else np.zeros_like(sims)
        return cls(np.asarray(times, np.float64), np.clip(np.asarray(scores, np.float64), 0.0, 1.0))

    def best_in(self, start: float, end: float) -> tuple[float, float] | None:
        """The best-scoring indexed frame in [start, end) as (time, score); None if the index has none there."""
        inside = np.flatnonzero((self.times >= start) & (self.times < end))
        if inside.size == 0:
            return None
        best = inside[int(np.argmax(self.scores[inside]))]
        return float(self.times[best]), float(self.scores[best])


def cell_picks(cells: Sequence[Cell], relevance: Relevance, mode: str, threshold: float) -> dict[int, CellPick]:
    """What each cell shows under ``mode`` (frames, marks, both): a substituted frame, a mark, or both."""
    frames, marks = mode in ("frames", "both"), mode in ("marks", "both")
    picks: dict[int, CellPick] = {}
    for cell in cells:
        best = relevance.best_in(cell.interval.start, cell.interval.end)
        if best is None:
            continue
        time, score = best
        pick = CellPick(time=time if frames and score >= threshold else None, score=score if marks else None)
        if pick.time is not None or pick.score is not None:
            picks[cell.index] = pick
    return picks


async def build_index(ctx: AgentContext) -> IndexInfo | None:
    """The run's frame index, built now or reused (None: anchors are off); what it cost this run."""
    settings = rlm(ctx)
    if settings.anchors == "off":
        return None
    _, info = await frame_index(ctx, settings)
    return info


async def relevance(ctx: AgentContext, search_task: str) -> Relevance | None:
    """The search task's score at every indexed frame (None: anchors off, no search task, or an empty index).

    The index and the search task's vector come from this process, else the run store, so only a
    run's first use embeds anything.
    """
    settings = rlm(ctx)
    if settings.anchors == "off" or not search_task.strip():
        return None
    index, _ = await frame_index(ctx, settings)
    vectors, _ = await query_vectors(ctx, settings, [search_task])
    if index.vectors.size == 0 or vectors.size == 0:
        return None
    return Relevance.of(index.times, index.vectors @ vectors[0])


async def grid_picks(ctx: AgentContext, search_task: str, path: CellPath) -> dict[int, CellPick]:
    """What the cells of the grid at ``path`` show under the run's anchors (none below ``anchor_depth``)."""
    settings = rlm(ctx)
    if settings.anchors == "off" or len(path) > settings.anchor_depth:
        return {}
    scores = await relevance(ctx, search_task)
    if scores is None:
        return {}
    grid = grid_for_path(ctx.atlas.duration, path, ctx.config.k)
    return cell_picks(grid.cells, scores, settings.anchors, settings.anchor_min)


def anchors_note(ctx: AgentContext, picks: dict[int, CellPick]) -> str:
    """The prompt's lines on what a picked frame and a relevance mark mean (empty when the grid has neither)."""
    parts = []
    if any(p.time is not None for p in picks.values()):
        parts.append(ctx.prompts.render("anchor_frames.note"))
    if any(p.score is not None for p in picks.values()):
        parts.append(ctx.prompts.render("anchor_marks.note"))
    return "\n".join(part.strip() for part in parts)


def picks_record(picks: dict[int, CellPick]) -> list[list[float | int | None]]:
    """The picks as plain data for a call's trace: [cell, frame time or None, score or None]."""
    return [[i, p.time, None if p.score is None else round(p.score, 3)] for i, p in sorted(picks.items())]
