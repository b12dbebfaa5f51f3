"""The data the agent keeps: evidence, views, targets, costs, worker reports, and their reducers.

Nothing here holds pixels: an evidence item keeps a reference (video identity, time, render size)
from which its frame is rendered again whenever it is shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from videoatlas.environment.geometry import Interval, merge_intervals

ViewKind = Literal["grid", "range", "investigate"]


class Frozen(BaseModel):
    """Immutable state records: a node returns new ones, it never edits what it was given."""

    model_config = ConfigDict(frozen=True)


class FrameRef(Frozen):
    """Enough to render an evidence frame again: which video, which moment, at what size."""

    video: str
    time: float
    px: int


class Evidence(Frozen):
    """One piece of visual evidence in the scratchpad."""

    id: str
    """Stable id: ``r{round}-{worker}-{n}``."""
    time: float
    """The moment the frame shows, in video seconds."""
    start: float
    end: float
    """The interval of the cell it was found in."""
    depth: int | None
    cell: str | None
    """Root path of the cell (``12/5``), or None when found in a custom interval."""
    description: str
    confidence: float
    subtitle: str | None = None
    frame: FrameRef
    round: int
    worker: str
    erased: bool = False
    """Set on a copy to remove the item through the reducer (uncertainty analysis erasing noise)."""


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
    source: Literal["probe", "frontier", "hint-cell", "hint-range"]

    @property
    def key(self) -> str:
        """Identity for virtual loss: the path, or the rounded range."""
        return self.path if self.path is not None else f"{self.start:.2f}-{self.end:.2f}"


class Cost(Frozen):
    """Model usage, summed over calls (master and workers counted apart)."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    images: int = 0
    master_tokens: int = 0
    worker_tokens: int = 0
    failed_calls: int = 0
    fallbacks: int = 0
    """Calls whose reply could not be used even after a re-ask, where the node went on without it."""

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Cost) -> Cost:
        return Cost(**{k: getattr(self, k) + getattr(other, k) for k in Cost.model_fields})


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


class Repair(Frozen):
    """A model reply the run could not use as given, and what it did instead (shown by ``trace``).

    ``dropped``: some entries were unusable (an explored or unknown cell, a repeated id, a backwards
    range) and the rest was kept; ``fallback``: the reply was unusable even after a re-ask, and the
    node went on without it (the rule it followed is in ``detail``).
    """

    node: str
    round: int
    worker: str | None = None
    kind: Literal["dropped", "fallback"]
    detail: str


class Hint(Frozen):
    """Where uncertainty analysis suggests looking next: a root cell or a short explicit range."""

    path: str | None = None
    start: float | None = None
    end: float | None = None


# -- reducers ----------------------------------------------------------------------------------------
# Parallel workers write in no particular order; every reducer sorts, so the result does not
# depend on which worker finished first.


def merge_evidence(current: Sequence[Evidence] | None, update: Sequence[Evidence] | None) -> list[Evidence]:
    """Union by id (a later copy wins), drop erased items, order by time then id."""
    by_id = {e.id: e for e in current or []}
    for item in update or []:
        by_id[item.id] = item
    return sorted((e for e in by_id.values() if not e.erased), key=lambda e: (e.time, e.id))


Zone = tuple[float, float]


def merge_zones(current: Sequence[Zone] | None, update: Sequence[Zone] | None) -> list[Zone]:
    """Union of explored intervals, merged and sorted."""
    intervals = [Interval(a, b) for a, b in [*(current or []), *(update or [])] if b > a]
    return [(iv.start, iv.end) for iv in merge_intervals(intervals)]


def add_cost(current: Cost | None, update: Cost | None) -> Cost:
    """Sum of costs."""
    return (current or Cost()) + (update or Cost())


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


def add_repairs(current: Sequence[Repair] | None, update: Sequence[Repair] | None) -> list[Repair]:
    """Every repair, ordered by round, node and worker (parallel workers write in any order)."""
    return sorted([*(current or []), *(update or [])], key=lambda r: (r.round, r.node, r.worker or "", r.detail))


def zones_as_intervals(zones: Sequence[Zone]) -> list[Interval]:
    """Dead zones as :class:`Interval` objects."""
    return [Interval(a, b) for a, b in zones]
