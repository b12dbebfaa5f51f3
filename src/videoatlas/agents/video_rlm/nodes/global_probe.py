"""Global probing: look at the root grid (explored regions masked) and assign the next cells to workers.

A BFS question first covers the timeline at the finest step one round of workers affords, at most
``bfs_resolution_s`` (``bfs_step``): while any stretch is not yet seen that finely, a round sends
workers only to those stretches, as ranges one grid each (:mod:`..coverage`). A DFS question sweeps
the same way, at the finest step the rounds left afford (``sweep_step``), after a round that found nothing
(``sweep_on_miss``), when the root grid's frames are further apart than ``bfs_resolution_s`` and the rounds
left cannot open every root cell left.
Otherwise targets come, in order, from the last uncertainty analysis's suggestions, then the BFS
frontier (cells workers marked promising, first in first out), then the model's ranking of root cells.
A priority queue with virtual loss keeps cells already assigned in earlier rounds (or taken by
another worker this round) from being picked again while fresher cells are available.
A DFS round assigns one cell per worker; a BFS round, whose workers take one step each, assigns
``bfs_cells`` cells per worker (``RunConfig.round_width``), ``workers`` explored at once: by default
as many as it takes to have searched every root cell by the last round.
Two targets that open as the same view (cells clamped to the maximum depth) get one worker.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from videoatlas.agents.video_rlm.anchors import anchors_note, build_index, grid_picks, picks_record
from videoatlas.agents.video_rlm.coverage import coverage_targets
from videoatlas.agents.video_rlm.nodes.prefix import master_prefix
from videoatlas.agents.video_rlm.nodes.views import (
    SYSTEM,
    cells_block,
    coverage_text,
)
from videoatlas.agents.video_rlm.nodes.worker_observe import initial_view
from videoatlas.agents.video_rlm.schemas import probe_schema
from videoatlas.agents.video_rlm.settings import rlm
from videoatlas.agents.video_rlm.state.master import MasterState
from videoatlas.agents.video_rlm.state.models import Marked, ProbeAnchors, Target, View
from videoatlas.agents.video_rlm.state.worker import WorkerInput
from videoatlas.environment.geometry import Interval, cell_interval, covered_fraction, parse_path
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import ModelReplyError
from videoatlas.runtime.calls import ask, budget_exhausted, emit, fallback, hear, subtitles_by_cell
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Where
from videoatlas.state.models import Cost, Repair, zones_as_intervals


def _is_dead(start: float, end: float, dead: list[Interval]) -> bool:
    return covered_fraction(Interval(start, end), dead) >= 0.999


async def global_probe(state: MasterState, runtime: Runtime[AgentContext]) -> Command[Literal["worker", "decide"]]:
    """Choose this round's targets and send one worker to each."""
    ctx = runtime.context
    cfg = ctx.config
    settings = rlm(ctx)
    duration = ctx.atlas.duration
    round_no = state["round"] + 1
    exhausted = budget_exhausted(state["cost"], cfg.call_budget, cfg.token_budget)
    if exhausted:
        return Command(goto="decide", update={"stop_reason": exhausted})
    dead = zones_as_intervals(state["dead_zones"])
    visits = dict(state["visits"])
    searched = zones_as_intervals(state.get("searched", [])) + dead
    unsearched = sum(
        1 for i in range(cfg.k * cfg.k) if covered_fraction(cell_interval(duration, (i,), cfg.k), searched) < 0.999
    )
    width = settings.round_width(state["traversal"], unsearched, settings.rounds - round_no + 1)
    # A DFS search that cannot open every root cell left in the rounds left sweeps instead (after an empty round).
    rounds_left = settings.rounds - round_no + 1
    sweep = settings.sweep_on_miss and unsearched > settings.workers * rounds_left
    sweep = sweep and duration / (cfg.k * cfg.k) > settings.bfs_resolution_s  # a root grid as fine has shown it all
    step = settings.coverage_step(state["traversal"], duration, cfg.k, rounds_left)
    uncovered = round_coverage_targets(state, duration, step, cfg.k * cfg.k, sweep=sweep)
    if uncovered:
        width = min(width, len(uncovered))  # a round that covers the timeline does only that
    targets: list[Target] = []
    taken: set[str] = set()
    views: set[View] = set()

    def take(target: Target) -> None:
        if target.key in taken or len(targets) >= width or _is_dead(target.start, target.end, dead):
            return
        # Cells below the depth limit open at the limit: at max depth 0 (a video under K*K seconds at
        # the auto setting, or --max-depth 0) every cell opens as the root grid. Workers on one view
        # would send the same prompt, so a view gets one worker.
        view = initial_view(target, ctx)
        if view in views:
            return
        targets.append(target)
        taken.add(target.key)
        views.add(view)

    for start, end in uncovered:
        take(Target(path=None, start=start, end=end, source="coverage"))
    for hint in state["hints"]:
        if hint.path is not None:
            iv = cell_interval(duration, parse_path(hint.path, cfg.k), cfg.k)
            take(Target(path=hint.path, start=iv.start, end=iv.end, source="hint-cell"))
        elif hint.start is not None and hint.end is not None:
            take(Target(path=None, start=hint.start, end=hint.end, source="hint-range"))
    taken_marks: list[Marked] = []
    for marked in state["frontier"]:
        if marked.path is not None:
            iv = cell_interval(duration, parse_path(marked.path, cfg.k), cfg.k)
        else:
            iv = Interval(marked.start or 0.0, marked.end or duration)
        # A promising cell some worker searched since is not sent again; an unfinished view is.
        stale = marked.reason == "promising" and visits.get(marked.key, 0) > 0
        if not stale:
            take(Target(path=marked.path, start=iv.start, end=iv.end, source="frontier"))
        if stale or marked.key in taken or _is_dead(iv.start, iv.end, dead):
            taken_marks.append(marked.model_copy(update={"taken": True}))

    cost_update = Cost()
    repairs: list[Repair] = []
    ctx.ledger.begin_round(round_no, state["cost"])
    indexed: dict[str, Any] = {}
    if state.get("index") is None:  # the first probe of a run with anchors builds (or reuses) its index
        info = await build_index(ctx)
        if info is not None:
            indexed = {"index": info, "index_frames": info.frames, "index_s": info.build_s}
    picks = await grid_picks(ctx, state["search_task"], ())
    root = await ctx.atlas.agrid((), dead, picks)
    open_cells = [c for c in root.grid.cells if not _is_dead(c.interval.start, c.interval.end, dead)]
    open_ids = [c.index for c in open_cells]
    needed = width - len(targets)
    ranked: list[int] = []
    if needed > 0 and open_cells:
        n = min(width, len(open_cells))
        heard = await hear(ctx, [c.interval for c in open_cells], Where("global_probe", round_no))
        repairs.extend(heard.repairs)
        images, shared = await master_prefix(ctx, state, root)
        values = {
            **shared,
            "n": n,
            "k": cfg.k,
            "duration": format_ts(duration, 0),
            "cells": "\n".join(
                part for part in (anchors_note(ctx, picks), cells_block(root.grid, dead, picks)) if part
            ),
            "progress": f"round {round_no} of {settings.rounds}; "
            f"{coverage_text(state, duration, step)}; "
            f"{len(state['evidence'])} evidence items",
            "hints": ", ".join(t.key for t in targets) or "(none)",
            "subtitles": subtitles_by_cell(
                heard.subtitles, [(c.index, c.interval) for c in open_cells], state["question"], state["choices"]
            )
            or "(none)",
        }
        emit("probe", round=round_no)
        try:
            reply, cost_update = await ask(
                ctx,
                probe_schema(n, open_ids),
                "global_probe",
                "probe",
                images,
                values,
                system=SYSTEM,
                thinker="master",
                meta={"round": round_no, **({"anchors": picks_record(picks)} if picks else {})},
            )
        except ModelReplyError as exc:
            cost_update, repair = fallback(exc, "global_probe", round_no, "cells taken by virtual loss, in time order")
            repairs.append(repair)
        else:
            ranked, dropped = usable_ids(reply.value.cells, open_ids)  # type: ignore[attr-defined]
            if dropped:
                repairs.append(Repair(node="global_probe", round=round_no, kind="dropped", detail=dropped))
        cost_update = cost_update + heard.cost
        # Priority queue: the model's rank, pushed back by virtual loss for earlier assignments.
        queue: list[tuple[float, int, int]] = []
        for rank, cell_id in enumerate(ranked):
            queue.append((rank + settings.virtual_loss * visits.get(str(cell_id), 0), rank, cell_id))
        # Cells the model did not rank come after: by relevance mark where the grid has marks, else in time order.
        scored = {i: p.score for i, p in picks.items() if p.score is not None}
        later = sorted(open_cells, key=lambda c: -scored[c.index]) if scored else open_cells
        for offset, cell in enumerate(later):
            if cell.index not in ranked:
                loss = settings.virtual_loss * visits.get(str(cell.index), 0)
                queue.append((n + offset + loss, n + offset, cell.index))
        heapq.heapify(queue)
        while queue and len(targets) < width:
            _, _, cell_id = heapq.heappop(queue)
            iv = root.grid.cells[cell_id].interval
            take(Target(path=str(cell_id), start=iv.start, end=iv.end, source="probe"))
    ctx.ledger.settle(None, cost_update)
    base: dict[str, Any] = {"cost": cost_update, "repairs": repairs, **indexed}
    if picks:
        base["anchor_log"] = [
            ProbeAnchors(round=round_no, cells=[(i, p.time, p.score) for i, p in sorted(picks.items())])
        ]
    if not targets:
        return Command(goto="decide", update={**base, "stop_reason": "every region is explored"})
    for target in targets:
        visits[target.key] = visits.get(target.key, 0) + 1
    budget = settings.dfs_steps if state["traversal"] == "dfs" else settings.bfs_steps
    spent = state["cost"] + cost_update
    sends = [
        Send(
            "worker",
            WorkerInput(
                worker=f"r{round_no}w{i + 1}",
                round=round_no,
                question=state["question"],
                choices=state["choices"],
                search_task=state["search_task"],
                traversal=state["traversal"],
                target=target,
                budget=budget,
                spent=spent,
                explored=state["dead_zones"],
                scratchpad=[e for e in state["evidence"] if target.start <= e.time < target.end],
            ),
        )
        for i, target in enumerate(targets)
    ]
    emit("assign", round=round_no, targets=[t.key for t in targets])
    update = {**base, "round": round_no, "assignments": targets, "visits": visits, "hints": [], "frontier": taken_marks}
    return Command(goto=sends, update=update)


def round_coverage_targets(
    state: MasterState, duration: float, resolution: float, cells: int, sweep: bool = False
) -> list[tuple[float, float]]:
    """The ranges not yet seen at ``resolution`` that this round covers first (none with coverage off).

    A BFS question covers the timeline before anything else. A DFS question does so only when it may
    ``sweep`` (``sweep_on_miss``, more root cells left than the rounds left can open, and root frames
    further apart than ``bfs_resolution_s``: a finer root grid has already shown every such stretch),
    after a round that left no evidence.
    """
    if resolution <= 0:
        return []
    if state["traversal"] != "bfs":
        empty_handed = state["round"] >= 1 and not any(not e.erased for e in state["evidence"])
        if not (sweep and empty_handed):
            return []
    return coverage_targets(state.get("coverage", []), duration, resolution, cells, min_span=MIN_TARGET_S)


MIN_TARGET_S = 0.5
"""An uncovered stretch shorter than this is a rounding sliver between covered ones, not sent to a worker."""


def usable_ids(ids: Sequence[int], allowed: Sequence[int]) -> tuple[list[int], str]:
    """The ids of a reply that can be used (allowed, first mention), and a note on the rest ("" if none)."""
    kept: list[int] = []
    bad: list[str] = []
    for cell_id in ids:
        if cell_id in kept:
            bad.append(f"{cell_id} (repeated)")
        elif cell_id not in allowed:
            bad.append(f"{cell_id} (explored or not in the grid)")
        else:
            kept.append(cell_id)
    return kept, ("dropped cell ids " + ", ".join(bad)) if bad else ""
