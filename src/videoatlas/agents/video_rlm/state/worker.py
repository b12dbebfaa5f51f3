"""A Worker's state: its assignment in, its exploration, and only reducer keys out."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from videoatlas.agents.video_rlm.state.master import Traversal, WorkerWrites
from videoatlas.agents.video_rlm.state.models import Step, Target, View
from videoatlas.state.models import Cost, Evidence, Zone


class WorkerInput(TypedDict):
    """One assignment, sent by the Master with ``Send``."""

    worker: str
    round: int
    question: str
    choices: list[str]
    search_task: str
    traversal: Traversal
    target: Target
    budget: int
    """Steps this worker may take (DFS: several, BFS: one)."""
    spent: Cost
    """What the run had spent when this worker was sent (the shared budget starts the round from it)."""
    explored: list[Zone]
    """The run's dead zones when the round began: shown blacked out in this worker's grids, not offered."""
    scratchpad: list[Evidence]
    """Evidence the run already holds inside this worker's target: not to be collected again."""


class CellNote(TypedDict):
    """What a rendered cell showed: its interval and the frame's time."""

    index: int
    start: float
    end: float
    time: float
    available: bool
    explored: bool
    """Inside the run's dead zones or a grid this worker went back from: blacked out, not offered."""
    collected: bool
    """Its frame shows a moment already in the scratchpad."""
    rel: NotRequired[float | None]
    """Its relevance mark (``anchors`` marks or both; 0-1), when the grid carries marks."""


class WorkerState(WorkerInput, WorkerWrites):
    """A worker's own keys, plus the reducer keys it hands back (:class:`WorkerWrites`)."""

    view: View
    stack: list[View]
    steps: list[Step]
    summary: str
    zoom_time: float | None
    allowed: list[str]
    cells: list[CellNote]
    image_sha: str
    decision: dict[str, Any] | None
    invalid_actions: int
    stop: str
    viewed: list[Zone]
    """Intervals of every view looked at."""
    examined: list[Zone]
    """Views searched through: left by FINISHED or BACKTRACK, or looked at where nothing opens finer (a
    leaf of the hierarchy, or a BFS scan of one level). Only these become dead zones and coverage."""
    left: list[Zone]
    """Intervals of grids this worker went back from: shown blacked out in its later views."""
    found: int


WorkerOutput = WorkerWrites
"""Only reducer keys, so parallel workers never collide on a plain key."""
