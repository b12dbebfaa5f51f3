"""The Master's state: what goes in, what it keeps between rounds, what comes out."""

from __future__ import annotations

from typing import Annotated, Literal, NotRequired, TypedDict

from videoatlas.agents.relation import Anchor, Relation
from videoatlas.agents.video_rlm.coverage import Seen, merge_coverage
from videoatlas.agents.video_rlm.state.models import (
    Hint,
    Marked,
    ProbeAnchors,
    Target,
    WorkerReport,
    add_anchor_log,
    add_marked,
    add_reports,
)
from videoatlas.state.models import (
    Cost,
    Evidence,
    IndexInfo,
    Repair,
    Zone,
    add_cost,
    add_repairs,
    merge_evidence,
    merge_zones,
)
from videoatlas.state.run import AnswerOutput, QuestionInput

Traversal = Literal["bfs", "dfs"]


MasterInput = QuestionInput
"""A question about the video in the runtime context."""


class RoundCheck(TypedDict):
    """The outcome of one uncertainty analysis."""

    round: int
    sufficient: bool
    p_sufficient: NotRequired[float | None]
    """The server's probability that the evidence sufficed (None: it gave none; absent in runs from before it)."""
    reasoning: str
    statuses: list[str]
    hints: int
    erased: list[str]


class WorkerWrites(TypedDict):
    """The keys parallel workers hand back to the Master: each has a reducer, so their writes merge.

    The one declaration of them: the Master's state, a worker's state and a worker's output all hold these.
    """

    evidence: Annotated[list[Evidence], merge_evidence]
    dead_zones: Annotated[list[Zone], merge_zones]
    searched: Annotated[list[Zone], merge_zones]
    """Intervals workers searched, with or without findings (what progress is measured by)."""
    coverage: Annotated[list[Seen], merge_coverage]
    """Stretches workers looked through, each at the finest step (seconds between frames) it was seen at."""
    cost: Annotated[Cost, add_cost]
    frontier: Annotated[list[Marked], add_marked]
    reports: Annotated[list[WorkerReport], add_reports]
    repairs: Annotated[list[Repair], add_repairs]
    """Replies used only in part, and fallbacks taken when a reply could not be used at all."""


class MasterState(MasterInput, WorkerWrites):
    """Everything the Master keeps: its own keys, and those workers write (:class:`WorkerWrites`)."""

    search_task: str
    relation: Relation
    """The time relation the question asks about (kind ``none`` when it asks none)."""
    anchor: Anchor | None
    """Where the relation's anchor was seen, once the uncertainty analysis named its evidence."""
    traversal: Traversal
    traversal_reason: str
    round: int
    """Rounds started so far."""
    assignments: list[Target]
    """This round's worker targets."""
    visits: dict[str, int]
    """Times each target key was assigned (virtual loss)."""
    hints: list[Hint]
    """Where the last uncertainty analysis suggested looking."""
    checks: list[RoundCheck]
    stop_reason: str
    answer: str
    answer_index: int | None
    declined: bool
    """The final decision found no answer to an open question (see :class:`~videoatlas.state.run.AnswerOutput`)."""
    probabilities: list[float] | None
    confidence: float | None
    reasoning: str
    cited: list[str]
    """Evidence ids the final decision rests on (none: the answer was picked without evidence)."""
    anchor_log: Annotated[list[ProbeAnchors], add_anchor_log]
    """What each round's probe grid showed under the run's anchors (none when they are off)."""
    index: IndexInfo | None
    """The frame embedding index the run's anchors used (``anchors``; None when they are off)."""
    index_frames: int
    """Frames in that index (0: no index)."""
    index_s: float
    """Seconds this run spent building it (0 when it was reused whole)."""


class MasterOutput(AnswerOutput):
    """What a run returns: the shared answer keys, and the search's own."""

    search_task: str
    relation: Relation
    anchor: Anchor | None
    traversal: Traversal
    checks: list[RoundCheck]
    reports: list[WorkerReport]
    dead_zones: list[Zone]
    searched: list[Zone]
    coverage: list[Seen]
    frontier: list[Marked]
    index: IndexInfo | None
    index_frames: int
    index_s: float
