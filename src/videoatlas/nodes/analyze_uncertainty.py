"""After each round: is the evidence sufficient, where to look next, what to drop as noise.

Routes to the final decision when the evidence suffices or a global budget is spent (rounds,
calls, tokens), otherwise back to global probing with the suggested places.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from videoatlas.environment.geometry import Interval, clip_to_video, covered_fraction
from videoatlas.errors import BadInputError
from videoatlas.graph.context import AgentContext
from videoatlas.nodes.common import (
    as_image,
    ask,
    budget_exhausted,
    cells_block,
    choices_block,
    coverage_text,
    emit,
    evidence_block,
    gaps_text,
    labelled,
    scratchpad_images,
)
from videoatlas.state.master import MasterState, RoundCheck
from videoatlas.state.models import Hint, zones_as_intervals
from videoatlas.state.schemas import MAX_RANGE_S, uncertainty_schema


async def analyze_uncertainty(
    state: MasterState, runtime: Runtime[AgentContext]
) -> Command[Literal["global_probe", "decide"]]:
    """One call: per-choice status, sufficiency, explore suggestions, evidence to erase."""
    ctx = runtime.context
    cfg = ctx.config
    duration = ctx.atlas.duration
    round_no = state["round"]
    new_this_round = any(e.round == round_no for e in state["evidence"])
    last_round = round_no >= cfg.rounds
    # A BFS question (counting, order, a sequence) can become answerable without new evidence, by
    # coverage alone ("no further STAR anywhere"), so it is analysed after every round once anything
    # was found. A DFS question with nothing new since the last analysis has nothing new to weigh.
    coverage_matters = state["traversal"] == "bfs" and bool(state["evidence"])
    if not new_this_round and not coverage_matters:
        if last_round:
            return Command(goto="decide", update={"stop_reason": f"{cfg.rounds} rounds done"})
        return Command(goto="global_probe")
    dead = zones_as_intervals(state["dead_zones"])
    root = await ctx.atlas.agrid((), dead)
    images = [as_image(root.image, "root grid")]
    images += await scratchpad_images(ctx, state["evidence"])
    values = {
        "question": state["question"],
        "choices": choices_block(state["choices"]),
        "search_task": state["search_task"],
        "evidence": evidence_block(state["evidence"]),
        "progress": f"{coverage_text(state, duration)} after round "
        f"{round_no} of {cfg.rounds}; {len(state['evidence'])} evidence items; {state['cost'].calls} model calls",
        "gaps": gaps_text(state["evidence"], state["dead_zones"], duration),
        "cells": cells_block(root.grid, dead),
        "n": cfg.workers,
        "max_range": f"{MAX_RANGE_S:.0f}",
    }
    schema = uncertainty_schema(len(state["choices"]), cfg.k * cfg.k, cfg.workers)
    emit("uncertainty", round=round_no)
    reply, cost = await ask(ctx, schema, "analyze_uncertainty", "uncertainty", images, values, meta={"round": round_no})
    value: Any = reply.value
    hints: list[Hint] = []
    for cell_id in value.explore_cells:
        iv = root.grid.cells[cell_id].interval
        if covered_fraction(iv, dead) < 0.999:
            hints.append(Hint(path=str(cell_id)))
    for rng in value.explore_ranges:
        try:
            iv = clip_to_video(Interval(rng.start, rng.end), duration)
        except BadInputError:
            continue  # a range outside the video is no place to look
        hints.append(Hint(start=iv.start, end=iv.end))
    labels = dict(labelled(state["evidence"]))
    erased = [labels[lbl.strip("[] ")] for lbl in value.erase if lbl.strip("[] ") in labels]
    check = RoundCheck(
        round=round_no,
        sufficient=bool(value.sufficient),
        reasoning=value.reasoning,
        statuses=[f"{s.choice}:{s.status}" for s in value.statuses],
        hints=len(hints),
        erased=[e.id for e in erased],
    )
    update: dict[str, Any] = {
        "hints": hints,
        "checks": [*state["checks"], check],
        "cost": cost,
        "evidence": [e.model_copy(update={"erased": True}) for e in erased],
    }
    emit(
        "uncertainty_done",
        round=round_no,
        sufficient=check["sufficient"],
        hints=len(hints),
        erased=len(erased),
    )
    if value.sufficient:
        return Command(goto="decide", update={**update, "stop_reason": "evidence sufficient"})
    spent = budget_exhausted(state["cost"] + cost, cfg.call_budget, cfg.token_budget)
    if spent:
        return Command(goto="decide", update={**update, "stop_reason": spent})
    if last_round:
        return Command(goto="decide", update={**update, "stop_reason": f"{cfg.rounds} rounds done"})
    return Command(goto="global_probe", update=update)
