"""EEA's state: queries, retrieval hits and anchors, the candidate segments, the memory, the rounds."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Annotated

from pydantic import Field

from videoatlas.agents.relation import Anchor as RelationAnchor
from videoatlas.agents.relation import Relation
from videoatlas.state.models import Frozen, IndexInfo, merge_by
from videoatlas.state.run import AnsweringState, AnswerOutput


class Anchor(Frozen):
    """A semantic anchor: the best-matching frame of one cluster of retrieval hits."""

    time: float
    phi: float
    """Its similarity to the query that found it (cosine)."""


class Segment(Frozen):
    """A node of the search tree: a stretch of the video, and what was said of it when it was a child."""

    id: int
    """1 for the whole video; children numbered in the order they were made."""
    start: float
    end: float
    parent: int | None = None
    round: int = 0
    """The round that made it (0: the whole video)."""
    reward: float = 0.0
    """r: the VLM's score scaled to 0-1."""
    score: float = 0.0
    """u: the query score of the anchors inside it."""
    fused: float = 0.0
    """h: what the selection sees (r alone with fusion off)."""
    explanation: str = ""
    expanded: bool = False


class Remembered(Frozen):
    """A frame in the memory buffer, with the reward it was kept by."""

    time: float
    reward: float
    round: int


class Round(Frozen):
    """One expansion: the segment, the frames sampled (anchors among them), and what happened next."""

    index: int
    segment: int
    frames: list[float]
    anchor_frames: list[float] = Field(default_factory=list)
    children: list[int] = Field(default_factory=list)
    uncertainty: float = 0.0
    """H over the candidates' rewards this round."""
    proposed: list[str] = Field(default_factory=list)
    """The queries the expansion's reply proposed, when it is asked for them (``update_call`` off)."""
    new_queries: list[str] = Field(default_factory=list)
    choice: str = ""
    """What the selection did: ``segment N`` or ``answer``."""
    thought: str = ""


def merge_by_id(current: Sequence[Segment] | None, update: Sequence[Segment] | None) -> list[Segment]:
    """Candidates by id (a segment written again replaces itself), in id order."""
    by_id = {s.id: s for s in current or []}
    for seg in update or []:
        by_id[seg.id] = seg
    return [by_id[i] for i in sorted(by_id)]


def add_rounds(current: Sequence[Round] | None, update: Sequence[Round] | None) -> list[Round]:
    """Rounds in order (a round written again replaces itself)."""
    return merge_by(current, update, lambda r: r.index)


class EEAState(AnsweringState):
    """Everything EEA keeps between nodes (never an image: times, scores and words)."""

    queries: list[str]
    hits: list[tuple[float, float]]
    """Every retrieval hit so far, (time, similarity), one per moment."""
    anchors: list[Anchor]
    segments: Annotated[list[Segment], merge_by_id]
    memory: list[Remembered]
    rounds: Annotated[list[Round], add_rounds]
    selected: int | None
    """The segment to expand next (None: answer)."""
    index: IndexInfo | None
    index_frames: int
    index_s: float
    embedded: Annotated[int, operator.add]
    """Texts and frames this run sent to the embedding model (0 when everything was reused)."""
    relation: Relation
    """The time relation the question asks about, said with the first queries (kind ``none`` when it asks none)."""
    anchor_hits: list[tuple[float, float]]
    """The hits of the relation's anchor (its phrase is the first query): expanded first while it is sought."""
    relation_anchor: RelationAnchor | None
    """Where the relation's anchor was seen, once an expansion named its frame (not a retrieval ``Anchor``)."""
    window_segment: int | None
    """The candidate made of the window the relation names beside its anchor (expanded next, once)."""


class EEAOutput(AnswerOutput):
    """What a run returns: the shared answer keys, the tree, the queries and anchors, the index used."""

    queries: list[str]
    anchors: list[Anchor]
    segments: list[Segment]
    rounds: list[Round]
    index: IndexInfo | None
    index_frames: int
    index_s: float
    embedded: int
    relation: Relation
    relation_anchor: RelationAnchor | None
