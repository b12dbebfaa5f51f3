"""What Video-RLM's prompts show: cell lists, the scratchpad (labels, lines, pages, close-ups), coverage."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from videoatlas.agents.video_rlm.coverage import coverage_line
from videoatlas.agents.video_rlm.settings import rlm
from videoatlas.agents.video_rlm.state.master import MasterState
from videoatlas.agents.video_rlm.state.models import found_in_cell, found_in_round
from videoatlas.environment.atlas import CellPick
from videoatlas.environment.geometry import Grid, Interval, covered_fraction, merge_intervals
from videoatlas.environment.render import ScratchTile
from videoatlas.environment.timefmt import format_ts
from videoatlas.llm.images import ImagePart
from videoatlas.runtime.calls import as_image, labelled
from videoatlas.runtime.context import AgentContext
from videoatlas.state.models import Evidence, Zone, zones_as_intervals

SYSTEM = "master.system"
"""The Master's system prompt: one for all its calls, so calls showing the same images share their prefix."""


def cells_block(grid: Grid, dead: Sequence[Interval] = (), picks: Mapping[int, CellPick] | None = None) -> str:
    """One line per cell: id, start, whether it is explored, and its relevance mark (if the grid has marks).

    A cell lasts until the next one starts (the grid's cells tile its span), so its end is not written: eight
    tokens fewer a cell, on every call that shows a grid.
    """
    lines = []
    picks = picks or {}
    decimals = 0 if grid.cell_span >= 10 else 1 if grid.cell_span >= 1 else 2
    for cell in grid.cells:
        iv = cell.interval
        mark = ""
        if dead:
            covered = covered_fraction(iv, dead)
            mark = " [explored]" if covered >= 0.999 else (f" [{covered:.0%} explored]" if covered > 0 else "")
        pick = picks.get(cell.index)
        if pick is not None and pick.score is not None and not mark.endswith("[explored]"):
            mark += f" [rel {min(99, round(100 * pick.score))}]"
        lines.append(f"{cell.index}: {format_ts(iv.start, decimals)}{mark}")
    return "\n".join(lines)


def evidence_block(evidence: Sequence[Evidence]) -> str:
    """One line per evidence item, with label, time, cell and description."""
    if not evidence:
        return "(none yet)"
    lines = []
    for label, e in labelled(evidence):
        cell = found_in_cell(e)
        where = f"cell {cell}" if cell else f"range {format_ts(e.start)}-{format_ts(e.end)}"
        sub = f' subtitle: "{e.subtitle}"' if e.subtitle else ""
        lines.append(
            f"[{label}] @{e.time:.1f} s ({where}, starts {e.start:.1f} s): {e.description} "
            f"(confidence {e.confidence:.2f}){sub}"
        )
    return "\n".join(lines)


def explored_share(zones: Sequence[Zone], duration: float) -> float:
    """Share of the video inside dead zones."""
    return covered_fraction(Interval(0.0, duration), zones_as_intervals(zones))


def coverage_text(state: MasterState, duration: float, resolution: float = 0.0) -> str:
    """How much of the video workers have searched, how much of it held nothing, and (BFS) how finely it was seen.

    ``resolution``: the step a BFS question covers the timeline at (``bfs_step``; 0: not said).
    """
    covered = explored_share(state.get("searched", []), duration)
    empty = explored_share(state["dead_zones"], duration)
    text = f"{covered:.0%} of the video covered by workers ({empty:.0%} explored without findings)"
    if resolution > 0 and state.get("traversal") == "bfs":
        text += "; " + coverage_line(state.get("coverage", []), duration, resolution)
    return text


def gaps_text(evidence: Sequence[Evidence], zones: Sequence[Zone], duration: float, limit: int = 6) -> str:
    """Unexplored stretches between consecutive evidence moments (for temporal interpolation)."""
    times = sorted({round(e.time, 1) for e in evidence})
    dead = merge_intervals(zones_as_intervals(zones))
    gaps = []
    for a, b in itertools.pairwise(times):
        if b - a < 1.0:
            continue
        share = covered_fraction(Interval(a, b), dead)
        if share < 0.9:
            gaps.append(f"{format_ts(a)}-{format_ts(b)} ({b - a:.0f} s, {share:.0%} explored)")
    if not gaps:
        return "(none)"
    return "; ".join(gaps[:limit]) + ("; ..." if len(gaps) > limit else "")


CLOSE_UPS = 4
"""At most this many collected close-ups are shown beside the scratchpad (each ~1,200 visual tokens)."""


async def scratchpad_images(ctx: AgentContext, evidence: Sequence[Evidence]) -> list[ImagePart]:
    """The scratchpad pages as images (each frame rendered again from its reference).

    An item a worker recorded from a close-up (ZOOM, then ADD) is also shown as that close-up,
    labelled with its scratchpad label, so the Master reads what the worker read. The most recent
    :data:`CLOSE_UPS` are shown, within the server's image limit.
    """
    if not evidence:
        return []
    tiles = [ScratchTile(i, e.time, e.subtitle) for i, e in enumerate(evidence)]
    pages = await ctx.atlas.ascratchpad(tiles, rlm(ctx).scratchpad_page)
    images = [as_image(page, f"scratchpad p{n + 1}") for n, page in enumerate(pages)]
    room = max(0, ctx.vlm.settings.max_images - 1 - len(images))  # the root grid comes first
    zoomed = [(label, e) for label, e in labelled(evidence) if e.frame.px > ctx.config.cell_px]
    zoomed = (
        sorted(zoomed, key=lambda pair: (found_in_round(pair[1]), pair[1].time))[-min(room, CLOSE_UPS) :]
        if room
        else []
    )
    for label, e in sorted(zoomed, key=lambda pair: pair[1].time):
        shot = await ctx.atlas.azoom(e.time, tag=label)
        images.append(as_image(shot, f"close-up [{label}]"))
    return images
