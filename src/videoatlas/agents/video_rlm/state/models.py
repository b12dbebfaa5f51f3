"""Video-RLM's records: what a worker looks at and is sent to, its steps and report, the frontier, hints."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

# Checkpoints written before agents/relation.py name these two here (``Frozen.former_modules``).
from videoatlas.agents.relation import Anchor as Anchor
from videoatlas.agents.relation import Relation as Relation
from videoatlas.environment.geometry import Interval
from videoatlas.state.models import Evidence, Frozen, merge_by

ViewKind = Literal["grid", "range", "investigate"]


class View(Frozen):
    """What a worker is looking at: a grid of the hierarchy, an explicit range, or an INVESTIGATE window."""

    kind: ViewKind
    path: str | None
    start: float
    end: float
    depth: int | None

    @property
    def interval(self) -> Interval:
        """The view's time span."""
        return Interval(self.start, self.end)


class Target(Frozen):
    """What a worker is assigned: a cell of the hierarchy (by path) or an explicit time range."""

    path: str | None
    start: float
    end: float
    source: Literal["probe", "frontier", "hint-cell", "hint-range", "coverage"]

    @property
    def key(self) -> str:
        """Identity for virtual loss: the path, or the rounded range."""
        return self.path if self.path is not None else f"{self.start:.2f}-{self.end:.2f}"


class Step(Frozen):
    """One worker step, for traces: what it saw, what it chose, what came of it."""

    index: int
    view: View
    action: str
    cells: list[int] = Field(default_factory=list)
    note: str = ""
    image_sha: str = ""
    prompt_tokens: int = 0
    latency_s: float = 0.0
    valid: bool = True


class WorkerReport(Frozen):
    """How a worker's exploration went."""

    worker: str
    round: int
    target: Target
    steps: list[Step]
    stop: str
    """finished, budget, global-budget, model-error."""
    evidence_ids: list[str]
    invalid_actions: int = 0


class Marked(Frozen):
    """A place queued for a later round (FIFO), by cell path or as an explicit range.

    Either a cell a BFS worker flagged as promising, or the view a worker was still exploring when
    its budget ran out (its unexplored part goes back to the Master).
    """

    round: int
    worker: str
    order: int
    path: str | None
    start: float | None = None
    end: float | None = None
    """The range, when ``path`` is None (a worker stopped inside an INVESTIGATE window or a range)."""
    reason: Literal["promising", "unfinished"] = "promising"
    taken: bool = False
    """Set on a copy to take the place off the frontier through the reducer (a round assigned it)."""

    @property
    def key(self) -> str:
        """The same identity as the :class:`Target` it becomes."""
        return self.path if self.path is not None else f"{self.start or 0.0:.2f}-{self.end or 0.0:.2f}"


class Hint(Frozen):
    """Where uncertainty analysis suggests looking next: a root cell or a short explicit range."""

    path: str | None = None
    start: float | None = None
    end: float | None = None


class ProbeAnchors(Frozen):
    """The anchors a round's probe grid showed (``anchors``): per cell, the picked frame's time and its mark."""

    round: int
    cells: list[tuple[int, float | None, float | None]]
    """(cell, time of the frame shown in place of the fixed one or None, relevance 0-1 or None)."""


def add_anchor_log(current: Sequence[ProbeAnchors] | None, update: Sequence[ProbeAnchors] | None) -> list[ProbeAnchors]:
    """Each probe's anchors once, by round (a step run again writes its round again)."""
    return merge_by(current, update, lambda a: a.round)


def add_reports(current: Sequence[WorkerReport] | None, update: Sequence[WorkerReport] | None) -> list[WorkerReport]:
    """All reports, ordered by round and worker."""
    return sorted([*(current or []), *(update or [])], key=lambda r: (r.round, r.worker))


def add_marked(current: Sequence[Marked] | None, update: Sequence[Marked] | None) -> list[Marked]:
    """The frontier in FIFO order (round, worker, order), each place once; a ``taken`` copy removes it."""
    by_key = {m.key: m for m in current or []}
    for m in sorted(update or [], key=lambda m: (m.round, m.worker, m.order)):
        if m.taken:
            by_key.pop(m.key, None)
        else:
            by_key.setdefault(m.key, m)
    return sorted(by_key.values(), key=lambda m: (m.round, m.worker, m.order))


# -- where a worker found an evidence item (its ``Evidence.where``) --------------------------------------


def found_at(round_no: int, worker: str, depth: int | None, cell: str | None) -> dict[str, Any]:
    """``place`` and ``where`` of an item a worker found: its round, worker, grid depth and cell path (when on a grid).

    Evidence checkpointed before the location was the agent's reads the same (``Evidence`` maps its old fields).
    """
    where: dict[str, Any] = {"round": round_no, "worker": worker}
    if depth is not None:
        where["depth"] = depth
    if cell:
        where["cell"] = cell
    return {"place": f"cell {cell}" if cell else "", "where": where}


def found_in_round(item: Evidence) -> int:
    """The round the item was found in."""
    return int(item.where.get("round") or 0)


def found_by(item: Evidence) -> str:
    """The worker that found the item."""
    return str(item.where.get("worker") or "")


def found_in_cell(item: Evidence) -> str | None:
    """The root path of the cell the item was found in (``12/5``), or None when found in a range."""
    cell = item.where.get("cell")
    return str(cell) if cell else None
