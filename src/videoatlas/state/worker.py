"""A Worker's state: its assignment in, its exploration, and only reducer keys out."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from videoatlas.state.master import Traversal
from videoatlas.state.models import (
    Cost,
    Evidence,
    Marked,
    Step,
    Target,
    View,
    WorkerReport,
    Zone,
    add_cost,
    add_marked,
    add_reports,
    merge_evidence,
    merge_zones,
)


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
    tokens_left: int | None
    """What is left of the run's token budget when the round starts (None: unlimited)."""


class CellNote(TypedDict):
    """What a rendered cell showed: its interval and the frame's time."""

    index: int
    start: float
    end: float
    time: float
    available: bool


class WorkerState(WorkerInput):
    """A worker's own keys, plus the reducer keys it hands back."""

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
    """Intervals of every view looked at (for dead zones)."""
    left: list[Zone]
    """Intervals of grids this worker went back from: shown blacked out in its later views."""
    found: int
    evidence: Annotated[list[Evidence], merge_evidence]
    dead_zones: Annotated[list[Zone], merge_zones]
    searched: Annotated[list[Zone], merge_zones]
    cost: Annotated[Cost, add_cost]
    frontier: Annotated[list[Marked], add_marked]
    reports: Annotated[list[WorkerReport], add_reports]


class WorkerOutput(TypedDict):
    """Only reducer keys, so parallel workers never collide on a plain key."""

    evidence: Annotated[list[Evidence], merge_evidence]
    dead_zones: Annotated[list[Zone], merge_zones]
    searched: Annotated[list[Zone], merge_zones]
    cost: Annotated[Cost, add_cost]
    frontier: Annotated[list[Marked], add_marked]
    reports: Annotated[list[WorkerReport], add_reports]
