"""Time relations every agent shares: the kinds, the model's reply, the window an anchor bounds, the time check.

A question may place its answer in time against something else it names, its anchor ("the word shown
right after the banner"). The relation is asked of the model with a JSON schema (:data:`RELATION_FIELDS`,
read back by :func:`relation_of`), never parsed from the question by word rules here. Each agent finds
the anchor in its own way and records where it was seen (:class:`Anchor`); the stretch the relation names
beside it (:func:`window`) is searched next (an agent that plans its own calls is told so by
:func:`relation_note`), and the final decision is told the anchor's time
(:func:`relation_text`) and its answer's cited times are checked against it (:func:`time_check`).
Plain functions and records; no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from videoatlas.environment.geometry import Interval
from videoatlas.environment.timefmt import format_moment, format_ts
from videoatlas.prompts import PromptSet, TemplateSpec
from videoatlas.state.models import Evidence, Frozen, Repair
from videoatlas.state.schemas import text

RelationKind = Literal["none", "right after", "just before", "between", "first", "last", "how long after"]
"""How the answer stands in time to something else the question names (its anchor)."""
ANCHORED: tuple[RelationKind, ...] = ("right after", "just before", "between", "how long after")
"""Relations whose answer lies in a window the anchor bounds: the anchor is found first."""
ANCHOR_CHARS = 200
"""The longest anchor phrase a reply may give."""
RELATION_FIELDS: dict[str, Any] = {
    "relation": (RelationKind, "none"),
    "anchor": (text(ANCHOR_CHARS), ""),
    "other_anchor": (text(ANCHOR_CHARS), ""),
}
"""The reply fields that ask for the relation (for ``create_model``): its kind, its anchor, the second anchor of
``between``. Each has a default, so a reply that leaves them out asks no relation."""
ANCHOR_REQUEST: TemplateSpec = {"anchor_request.note": (frozenset({"anchor"}), frozenset())}
"""The note a tool's call adds while the anchor is sought: which of the frames shown has ``anchor`` in it."""
RELATION_TEMPLATES: TemplateSpec = {
    "relation_ask.note": (frozenset(), frozenset()),
    "relation_seek.note": (frozenset({"anchor"}), frozenset({"kind", "side"})),
    "relation_window.note": (frozenset({"anchor", "start", "end"}), frozenset({"kind", "side", "time"})),
    **ANCHOR_REQUEST,
}
"""The notes an agent that plans its own calls tells its planner of the relation with (:func:`relation_note`
renders the first three), and its tools' anchor request, with the variables each may use; the text is the agent's."""
RELATION_NOTES = frozenset(RELATION_TEMPLATES)
"""Those notes by name: a prompt set that leaves them out takes the agent's defaults."""
SAME_MOMENT_S = 1e-3
"""Two times this close are one moment (the anchor's own frame among the cited evidence)."""


class Relation(Frozen):
    """The time relation a question asks about, read from it before any frame is seen."""

    former_modules = ("videoatlas.agents.video_rlm.state.models",)  # before it was shared by every agent

    kind: RelationKind = "none"
    anchor: str = ""
    """The event the answer is placed against ("the banner"); for ``between``, the earlier one."""
    other: str = ""
    """For ``between``, the later anchor; otherwise empty."""

    @property
    def anchored(self) -> bool:
        """Whether the answer lies in a window an anchor bounds (the anchor is searched for first).

        An anchored kind without an anchor phrase says nothing to search by: the agent searches as
        without a relation.
        """
        return self.kind in ANCHORED and bool(self.anchor.strip())

    @property
    def told(self) -> bool:
        """Whether there is a relation to tell the model: a kind, with its anchor phrase when the kind needs one."""
        return self.kind != "none" and (self.kind not in ANCHORED or self.anchored)

    @property
    def side(self) -> Literal["after", "before"]:
        """The side of the anchor the answer lies on (``before`` only for "just before")."""
        return "before" if self.kind == "just before" else "after"


class Anchor(Frozen):
    """Where the relation's anchor was seen: the evidence that shows it (if the agent keeps one), its interval."""

    former_modules = ("videoatlas.agents.video_rlm.state.models",)  # before it was shared by every agent

    evidence: str = ""
    """The id of the evidence item showing the anchor ("" when the agent names it by its time alone)."""
    time: float
    start: float
    end: float

    @classmethod
    def at(cls, t: float) -> Anchor:
        """An anchor seen in one frame at ``t``."""
        return cls(time=t, start=t, end=t)


def relation_of(value: Any) -> Relation:
    """The relation a reply carrying :data:`RELATION_FIELDS` names (kind ``none`` when it names none)."""
    return Relation(
        kind=getattr(value, "relation", "none") or "none",
        anchor=(getattr(value, "anchor", "") or "").strip(),
        other=(getattr(value, "other_anchor", "") or "").strip(),
    )


def window(relation: Relation | None, anchor: Anchor, duration: float, length: float) -> Interval | None:
    """The stretch of ``length`` s the relation names beside its anchor, clipped to the video.

    After the anchor for "right after", "how long after" and "between" (from its first anchor), before
    it for "just before". None when the stretch is empty, or when there is no relation an anchor bounds.
    """
    if relation is None or not relation.anchored:
        return None
    if relation.side == "before":
        start, end = max(0.0, anchor.start - length), min(anchor.start, duration)
    else:
        start, end = max(0.0, anchor.end), min(duration, anchor.end + length)
    return Interval(start, end) if end - start > 0 else None


def relation_note(prompts: PromptSet, relation: Relation | None, anchor: Anchor | None, beside: Interval | None) -> str:
    """What a planner is told of the time relation at a step.

    ``relation`` None: not asked yet, so the step asks for it (``relation_ask.note``). An anchored
    relation: the anchor to find (``relation_seek.note``), or, once ``anchor`` was seen, where and the
    window ``beside`` it to search (``relation_window.note``). Any other relation: nothing.
    """
    if relation is None:
        return prompts.render("relation_ask.note").strip()
    if not relation.anchored:
        return ""
    values: dict[str, Any] = {"kind": relation.kind, "anchor": relation.anchor, "side": relation.side}
    if anchor is None or beside is None:
        return prompts.render("relation_seek.note", **values).strip()
    found = {"time": format_moment(anchor.time), "start": f"{beside.start:.1f}", "end": f"{beside.end:.1f}"}
    return prompts.render("relation_window.note", **values, **found).strip()


def anchor_label(anchor: Anchor | None, labelled: Sequence[tuple[str, Evidence]]) -> str | None:
    """The label of the evidence that shows the anchor in a call (by its id, else by its time); None if none does."""
    if anchor is None:
        return None
    for label, item in labelled:
        if item.id == anchor.evidence or (not anchor.evidence and abs(item.time - anchor.time) < SAME_MOMENT_S):
            return label
    return None


@dataclass(frozen=True, slots=True)
class RelationNotes:
    """The note templates a relation is said with: first or last, between two anchors (or one), beside one."""

    order: str = "relation_order.note"
    between: str = "relation_between.note"
    between_open: str = "relation_between_open.note"
    side: str = "relation_side.note"


def relation_said(prompts: PromptSet, relation: Relation, notes: RelationNotes = RelationNotes()) -> str:
    """The relation as the prompt set says it, with ``notes`` (default: the final decision's shared ones)."""
    if relation.kind in ("first", "last"):
        return prompts.note(notes.order, kind=relation.kind)
    if relation.kind == "between":
        if relation.other:
            return prompts.note(notes.between, anchor=relation.anchor, other=relation.other)
        return prompts.note(notes.between_open, anchor=relation.anchor)
    return prompts.note(notes.side, kind=relation.kind, anchor=relation.anchor, side=relation.side)


def relation_text(prompts: PromptSet, relation: Relation, anchor: Anchor | None, label: str | None) -> str:
    """What the final decision is told about the relation: the relation, and the anchor's time when found.

    ``label``: the anchor's evidence label in the call (None when no labelled item shows it). The
    sentences are the prompt set's notes (``relation_*.note``, ``anchor_*.note``; shared defaults).
    """
    if not relation.told:
        return prompts.note("relation_none.note")
    said = relation_said(prompts, relation)
    if relation.kind in ("first", "last"):
        return said
    if anchor is None:
        return f"{said} {prompts.note('anchor_unseen.note')}"
    at = {"time": format_ts(anchor.time), "seconds": f"{anchor.time:.1f}"}
    shown = prompts.note("anchor_cited.note", label=label, **at) if label else prompts.note("anchor_seen.note", **at)
    return f"{said} {shown}"


def time_check(relation: Relation, anchor: Anchor | None, cited: Sequence[Evidence]) -> str:
    """A sentence checking the cited evidence's times against the anchor ("" when there is nothing to check).

    The anchor's own evidence (by id, or at its moment) is left out; each other cited moment is placed
    before or after the anchor, and the ones on the side the relation rules out are named.
    """
    if anchor is None or not relation.anchored:
        return ""
    others = [
        e
        for e in cited
        if not (e.id == anchor.evidence or (not anchor.evidence and abs(e.time - anchor.time) < SAME_MOMENT_S))
    ]
    if not others:
        return f"Time check: the answer cites no evidence besides the anchor at {format_ts(anchor.time)}."
    want_after = relation.side == "after"
    parts, wrong = [], []
    for e in sorted(others, key=lambda e: e.time):
        gap = e.time - anchor.time
        side = "after" if gap > 0 else "before" if gap < 0 else "at"
        parts.append(f"{format_ts(e.time)} is {abs(gap):.1f} s {side} it")
        if (want_after and gap <= 0) or (not want_after and gap >= 0):
            wrong.append(format_ts(e.time))
    text_ = f"Time check against the anchor at {format_ts(anchor.time)} ({relation.kind}): " + "; ".join(parts) + "."
    if wrong:
        text_ += f" Cited evidence on the wrong side of the anchor: {', '.join(wrong)}."
    return text_


def with_time_check(
    result: dict[str, Any], relation: Relation, anchor: Anchor | None, cited: Sequence[Evidence]
) -> dict[str, Any]:
    """A final decision's result with the time check added to its reasoning (unchanged when there is none)."""
    check = time_check(relation, anchor, cited)
    if not check or not result.get("answer"):
        return result
    return {**result, "reasoning": f"{result.get('reasoning', '')}\n{check}".strip()}


def inside(start: float, end: float, held: Interval) -> tuple[float, float]:
    """``start``-``end`` clipped to ``held``; the whole of ``held`` when nothing of the span is left inside."""
    lo, hi = sorted((min(max(start, held.start), held.end), min(max(end, held.start), held.end)))
    return (lo, hi) if hi - lo > 0 else (held.start, held.end)


@dataclass(frozen=True, slots=True)
class RelationStep:
    """What one step of a thinker that plans its own calls owes the question's time relation.

    ``asked``: the step's reply is asked for the relation (the first step: none is known yet); a reply
    that gives none, or no usable reply, leaves the question one without a relation. ``held``: the window
    the step must look in (the step right after the anchor was seen); ``hold`` moves a call's times inside
    it and says what it changed.
    """

    asked: bool
    held: Interval | None
    hold: Callable[[dict[str, Any], Interval], tuple[dict[str, Any], str]]

    @property
    def window(self) -> tuple[float, float] | None:
        """The span the step's schema bounds its times to (None: the whole video)."""
        return (self.held.start, self.held.end) if self.held is not None else None

    def kept(self, value: Any) -> dict[str, Any]:
        """The state a usable reply sets for the relation: the relation it gave, when it was asked for one."""
        return {"relation": relation_of(value)} if self.asked else {}

    def settle(self, call: dict[str, Any], update: dict[str, Any], node: str, step: int) -> dict[str, Any]:
        """The call to run once the relation is settled; ``update`` gains the relation and a repair of ``node``."""
        if self.asked and "relation" not in update:
            update["relation"] = Relation()  # no usable first step: searched as a question without a relation
        if self.held is None:
            return call
        call, note = self.hold(call, self.held)
        if note:
            repair = Repair(node=node, round=step, kind="dropped", detail=note)
            update["repairs"] = [*update.get("repairs", []), repair]
        return call
