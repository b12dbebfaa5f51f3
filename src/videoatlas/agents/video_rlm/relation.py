"""Video-RLM's side of time relations: the sentence its search task carries, and the window as hints.

The relation, its anchor, the window arithmetic and the decision's time check are every agent's
(:mod:`videoatlas.agents.relation`); here the search task says the relation in Video-RLM's own terms
(its INVESTIGATE action, in its ``task_*.note`` templates), and the window beside a found anchor
becomes the next round's first hint.
Plain functions; no I/O.
"""

from __future__ import annotations

from videoatlas.agents.relation import Anchor, Relation, RelationNotes, relation_said, window
from videoatlas.agents.video_rlm.schemas import MAX_RANGE_S
from videoatlas.agents.video_rlm.state.models import Hint
from videoatlas.prompts import PromptSet

TASK_NOTES = RelationNotes(between="task_between.note", between_open="task_between_open.note", side="task_side.note")
"""How the search task says a relation: the shared note for first and last, Video-RLM's own for an anchor."""


def task_sentence(prompts: PromptSet, relation: Relation) -> str:
    """The relation as one sentence for the search task every prompt shows ("" when the question asks none)."""
    if not relation.told:
        return ""  # an anchored relation without its anchor says nothing to search by
    return relation_said(prompts, relation, TASK_NOTES)


def window_hints(relation: Relation, anchor: Anchor, duration: float, k: int) -> list[Hint]:
    """The stretch the relation names beside its anchor, one root cell long (at least ``MAX_RANGE_S``), as a hint.

    After the anchor for "right after", "how long after" and "between" (from its first anchor), before
    it for "just before"; clipped to the video (:func:`~videoatlas.agents.relation.window`).
    """
    found = window(relation, anchor, duration, max(MAX_RANGE_S, duration / (k * k)))
    return [Hint(start=found.start, end=found.end)] if found is not None else []
