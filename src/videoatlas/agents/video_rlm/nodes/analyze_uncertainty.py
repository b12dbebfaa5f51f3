"""After each round: is the evidence sufficient, where to look next, what to drop as noise.

Routes to the final decision when the evidence suffices or a global budget is spent (rounds,
calls, tokens), otherwise back to global probing with the suggested places. Whether the evidence
suffices is the server's probability of the reply's ``sufficient`` being true, against the run's
``confidence`` threshold; a server that gives no logprobs leaves the model's own yes or no.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from videoatlas.agents.relation import Anchor, Relation
from videoatlas.agents.video_rlm.coverage import Seen, covered_at
from videoatlas.agents.video_rlm.nodes.prefix import master_prefix
from videoatlas.agents.video_rlm.nodes.views import (
    SYSTEM,
    cells_block,
    coverage_text,
    gaps_text,
)
from videoatlas.agents.video_rlm.occurrences import occurrences_block
from videoatlas.agents.video_rlm.relation import window_hints
from videoatlas.agents.video_rlm.schemas import MAX_RANGE_S, uncertainty_schema
from videoatlas.agents.video_rlm.settings import rlm
from videoatlas.agents.video_rlm.state.master import MasterState, RoundCheck
from videoatlas.agents.video_rlm.state.models import Hint, found_in_round
from videoatlas.environment.geometry import (
    Cell,
    Interval,
    cell_interval,
    clip_to_video,
    covered_fraction,
    parse_path,
)
from videoatlas.errors import BadInputError, ModelReplyError
from videoatlas.llm.logprobs import flag_probability, settled
from videoatlas.runtime.calls import ask, budget_exhausted, emit, fallback, labelled
from videoatlas.runtime.context import AgentContext
from videoatlas.state.models import Evidence, Repair, zones_as_intervals
from videoatlas.state.schemas import distinct


async def analyze_uncertainty(
    state: MasterState, runtime: Runtime[AgentContext]
) -> Command[Literal["global_probe", "decide"]]:
    """One call: per-choice status, sufficiency, explore suggestions, evidence to erase."""
    ctx = runtime.context
    cfg = ctx.config
    settings = rlm(ctx)
    duration = ctx.atlas.duration
    round_no = state["round"]
    new_this_round = any(found_in_round(e) == round_no for e in state["evidence"])
    last_round = round_no >= settings.rounds
    # A BFS question (counting, order, a sequence) can become answerable without new evidence, by
    # coverage alone (nothing more of it anywhere), so it is analysed after every round once anything
    # was found. A DFS question with nothing new since the last analysis has nothing new to weigh.
    coverage_matters = state["traversal"] == "bfs" and bool(state["evidence"])
    if not new_this_round and not coverage_matters:
        if last_round:
            return Command(goto="decide", update={"stop_reason": f"{settings.rounds} rounds done"})
        return Command(goto="global_probe")
    relation: Relation = state.get("relation") or Relation()
    step = settings.bfs_step(duration, cfg.k)
    seeking_anchor = relation.anchored and state.get("anchor") is None
    dead = zones_as_intervals(state["dead_zones"])
    root = await ctx.atlas.agrid((), dead)
    images, shared = await master_prefix(ctx, state, root)
    values = {
        **shared,
        "progress": f"{coverage_text(state, duration, step)} after round "
        f"{round_no} of {settings.rounds}; {len(state['evidence'])} evidence items; {state['cost'].calls} model calls",
        "gaps": gaps_text(state["evidence"], state["dead_zones"], duration),
        "occurrences": occurrences_block(state["evidence"]),
        # Asked only while the anchor is missing (the schema then has "anchor").
        "anchor_request": ctx.prompts.render("relation_anchor.note").rstrip("\n") if seeking_anchor else "",
        "cells": cells_block(root.grid, dead),
        "n": settings.workers,
        "max_range": f"{MAX_RANGE_S:.0f}",
    }
    open_ids = [c.index for c in root.grid.cells if covered_fraction(c.interval, dead) < 0.999]
    labels = dict(labelled(state["evidence"]))
    schema = uncertainty_schema(
        len(state["choices"]), open_ids, settings.workers, duration, list(labels), anchored=seeking_anchor
    )
    emit("uncertainty", round=round_no)
    repairs: list[Repair] = []
    try:
        reply, cost = await ask(
            ctx,
            schema,
            "analyze_uncertainty",
            "uncertainty",
            images,
            values,
            system=SYSTEM,
            thinker="master",
            meta={"round": round_no},
            logprobs=True,
        )
    except ModelReplyError as exc:
        cost, repair = fallback(exc, "analyze_uncertainty", round_no, "not sufficient, no places suggested")
        reply, repairs = None, [repair]
    value: Any = reply.value if reply is not None else None
    hints, dropped = _hints(value, root.grid.cells, open_ids, duration)
    anchor = _anchor(value, labels) if seeking_anchor else None
    if anchor is not None:
        # The anchor found once bounds the search: its window is searched next, before anything else.
        hints = [*window_hints(relation, anchor, duration, cfg.k), *hints]
    if state["traversal"] == "bfs" and step > 0:
        hints, reread = _uncovered_hints(hints, state.get("coverage", []), step, cfg.k, duration)
        if reread:
            dropped.append(f"places already seen at {step:.3g} s or finer (not read again): {reread}")
    to_erase, repeated = distinct(lbl.strip("[] ") for lbl in (value.erase if value else []))
    erased = [labels[lbl] for lbl in to_erase if lbl in labels]
    unknown = [lbl for lbl in to_erase if lbl not in labels]
    if unknown:
        dropped.append("erase labels not in the scratchpad: " + ", ".join(unknown))
    if repeated:
        dropped.append("repeated erase labels: " + ", ".join(repeated))
    if dropped:
        repairs.append(Repair(node="analyze_uncertainty", round=round_no, kind="dropped", detail="; ".join(dropped)))
    sure = flag_probability(reply.tokens, reply.record.reply_text, "sufficient") if reply is not None else None
    said = bool(value.sufficient) if value else False
    check = RoundCheck(
        round=round_no,
        sufficient=settled(said, sure, settings.confidence),
        p_sufficient=None if sure is None else round(sure, 4),
        reasoning=value.reasoning if value else "the analysis could not be read; searching on",
        statuses=[f"{s.choice}:{s.status}" for s in value.statuses] if value else [],
        hints=len(hints),
        erased=[e.id for e in erased],
    )
    update: dict[str, Any] = {
        **({"anchor": anchor} if anchor is not None else {}),
        "hints": hints,
        "checks": [*state["checks"], check],
        "cost": cost,
        "repairs": repairs,
        "evidence": [e.model_copy(update={"erased": True}) for e in erased],
    }
    emit(
        "uncertainty_done",
        round=round_no,
        sufficient=check["sufficient"],
        p_sufficient=check.get("p_sufficient"),
        hints=len(hints),
        erased=len(erased),
    )
    if check["sufficient"]:
        return Command(goto="decide", update={**update, "stop_reason": "evidence sufficient"})
    spent = budget_exhausted(state["cost"] + cost, cfg.call_budget, cfg.token_budget)
    if spent:
        return Command(goto="decide", update={**update, "stop_reason": spent})
    if last_round:
        return Command(goto="decide", update={**update, "stop_reason": f"{settings.rounds} rounds done"})
    return Command(goto="global_probe", update=update)


def _hints(value: Any, cells: Sequence[Cell], open_ids: Sequence[int], duration: float) -> tuple[list[Hint], list[str]]:
    """Places to look next from a reply: open cells, and ranges inside the video no longer than allowed.

    Returns the hints and a note per kind of entry that was dropped (an explored or unknown cell, a
    range outside the video, backwards, empty or too long).
    """
    if value is None:
        return [], []
    hints: list[Hint] = []
    suggested, repeated = distinct(value.explore_cells)
    bad_cells = [str(c) for c in suggested if c not in open_ids]
    for cell_id in (c for c in suggested if c in open_ids):
        hints.append(Hint(path=str(cells[cell_id].index)))
    bad_ranges = []
    for rng in value.explore_ranges:
        span = rng.end - rng.start
        try:
            iv = clip_to_video(Interval(rng.start, rng.end), duration) if 0 < span <= MAX_RANGE_S else None
        except BadInputError:
            iv = None
        if iv is None:
            bad_ranges.append(f"{rng.start:g}-{rng.end:g}")
        else:
            hints.append(Hint(start=iv.start, end=iv.end))
    dropped = []
    if repeated:
        dropped.append("repeated cells " + ", ".join(str(c) for c in repeated))
    if bad_cells:
        dropped.append("explored or unknown cells " + ", ".join(bad_cells))
    if bad_ranges:
        too_long = f"longer than {MAX_RANGE_S:.0f} s"
        dropped.append(f"ranges outside the video, backwards or {too_long}: " + ", ".join(bad_ranges))
    return hints, dropped


def _uncovered_hints(
    hints: Sequence[Hint], coverage: Sequence[Seen], resolution: float, k: int, duration: float
) -> tuple[list[Hint], str]:
    """The hints that reach a stretch not yet seen at ``resolution``, and the others named ("" if none).

    A BFS question needs the whole timeline seen finely once; reading a covered stretch again adds
    nothing to a count, so those hints go, and the uncovered stretches are sent next (global probe).
    """
    covered = [Interval(a, b) for a, b in covered_at(coverage, resolution)]
    kept: list[Hint] = []
    gone: list[str] = []
    for hint in hints:
        if hint.path is not None:
            iv = cell_interval(duration, parse_path(hint.path, k), k)
            name = f"cell {hint.path}"
        else:
            iv = Interval(hint.start or 0.0, hint.end or 0.0)
            name = f"{iv.start:g}-{iv.end:g} s"
        if covered and covered_fraction(iv, covered) >= 0.999:
            gone.append(name)
        else:
            kept.append(hint)
    return kept, ", ".join(gone)


def _anchor(value: Any, labels: dict[str, Evidence]) -> Anchor | None:
    """The anchor the reply names (the first known label), as an :class:`Anchor`; None when it names none."""
    for label in getattr(value, "anchor", None) or []:
        item = labels.get(label.strip("[] "))
        if item is not None:
            return Anchor(evidence=item.id, time=item.time, start=item.start, end=item.end)
    return None
