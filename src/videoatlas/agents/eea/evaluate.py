"""One expansion: frames chosen in the selected segment, its children scored by the VLM, rewards fused.

Semantic-guided expansion takes the segment's ``anchors`` best anchors and adds frames that leave the shortest
longest stretch unseen (:func:`~videoatlas.agents.eea.search.expansion_frames`); the frames cut it into children.
The VLM sees the frames, the children's spans and earlier scores and scores each child 0-100 with a reason; the
same reply gives the round's new search queries, read from those frames (``update_call`` off;
:mod:`~videoatlas.agents.eea.update` uses them). Each candidate's query score u comes from the anchors inside it;
with fusion on, h = (1 - H) r + H u over every candidate not yet expanded (H: the normalised entropy of the
rewards), else h = r. The frames join the memory, the lowest-reward ones leaving it when it is over its cap (a
frame's reward: the mean of its two neighbouring children's h, which is r with fusion off; on a tie the newer
frame stays).

While a time relation's anchor is sought, the frames are placed by the anchor query's own hits, and the VLM is
also asked which frame shows the anchor; once one does, the window the relation names beside it becomes a
candidate of its own (:func:`window_segment`), expanded next, its frames each twice as far from the anchor as the
one before (:func:`~videoatlas.agents.eea.search.gallop_frames`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.eea.retrieve import anchors_of
from videoatlas.agents.eea.schemas import child_key, rewards_schema
from videoatlas.agents.eea.search import children, expansion_frames, fuse, gallop_frames, query_score
from videoatlas.agents.eea.settings import EEASettings, eea
from videoatlas.agents.eea.state import Anchor, EEAState, Remembered, Round, Segment
from videoatlas.agents.eea.views import (
    SYSTEM,
    children_block,
    history_block,
    moments,
    opened_block,
    queries_block,
    span,
)
from videoatlas.agents.relation import Anchor as RelationAnchor
from videoatlas.agents.relation import Relation, window
from videoatlas.environment.geometry import Interval
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import ModelReplyError
from videoatlas.llm.images import ImagePart
from videoatlas.runtime.calls import as_image, ask, choices_block, emit, fallback, hear, speech_lines
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Where
from videoatlas.state.models import Repair

COLUMNS = 3
"""Frames to a row in the image of a round's frames."""


async def round_images(ctx: AgentContext, settings: EEASettings, frames: Sequence[float]) -> list[ImagePart]:
    """A round's frames as the VLM sees them: one labelled mosaic (ids from 1), in time order."""
    rows = max(1, math.ceil(len(frames) / COLUMNS))
    pages = await ctx.atlas.amosaic(list(frames), COLUMNS, rows, settings.frame_px, first_id=1)
    return [as_image(page, f"round frames {n + 1}") for n, page in enumerate(pages)]


def shortest_opened(ctx: AgentContext, settings: EEASettings) -> float:
    """The shortest stretch worth opening: one with room for B frames of the video between its two ends.

    A shorter one would be cut by repeats of the same few frames (seen: six frames within 0.1 s).
    """
    fps = float(ctx.atlas.source.info.fps or 0.0)
    return (settings.expand_frames + 1) / fps if fps > 0 else 0.0


def candidates(segments: Sequence[Segment], shortest_s: float = 0.0) -> list[Segment]:
    """The leaves of the tree the search may expand next: every child not expanded yet, ``shortest_s`` or longer."""
    return [s for s in segments if not s.expanded and s.round > 0 and s.end - s.start >= shortest_s - 1e-6]


def remember(memory: Sequence[Remembered], new: Sequence[Remembered], cap: int) -> list[Remembered]:
    """The memory with ``new`` frames added, the lowest rewards evicted past ``cap``, in time order."""
    merged = {round(m.time, 3): m for m in memory}
    for m in new:
        merged.setdefault(round(m.time, 3), m)
    kept = sorted(merged.values(), key=lambda m: (-m.reward, -m.round, m.time))[:cap]
    return sorted(kept, key=lambda m: m.time)


def fused(segments: Sequence[Segment], settings: EEASettings, shortest_s: float) -> tuple[list[Segment], float]:
    """Every candidate with h set (fusion on: from r and u over all candidates; off: h = r), and H."""
    pool = candidates(segments, shortest_s)
    if not pool:
        return [], 0.0
    h, uncertainty = fuse([s.reward for s in pool], [s.score for s in pool], settings.entropy_temperature)
    if not settings.uarf:
        h = [s.reward for s in pool]
    return [s.model_copy(update={"fused": v}) for s, v in zip(pool, h, strict=True)], uncertainty


async def evaluate(state: EEAState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Expand the selected segment and score its children."""
    ctx = runtime.context
    settings = eea(ctx)
    segments = state["segments"]
    parent = next(s for s in segments if s.id == state["selected"])
    round_no = len(state.get("rounds") or []) + 1
    anchors: list[Anchor] = state.get("anchors") or []
    relation: Relation = state.get("relation") or Relation()
    seeking = relation.anchored and state.get("relation_anchor") is None
    # The round's new queries are asked for here, of the frames this call reads, unless a call of their own asks.
    asking = settings.query_update and not settings.update_call
    held = state.get("queries") or []
    # While the relation's anchor is sought, its own hits place the frames: the anchor is retrieved first.
    placing = anchors_of(state.get("anchor_hits") or [], settings.cluster_gap_s) if seeking else []
    fixed: list[float] = []
    if parent.id == state.get("window_segment"):  # the window beside the anchor: densest next to it
        frames = gallop_frames(parent.start, parent.end, settings.expand_frames, relation.side == "before")
    else:
        fixed, frames = expansion_frames(
            parent.start, parent.end, [(a.time, a.phi) for a in placing or anchors], settings.expand_frames,
            settings.anchors, 2 * settings.cluster_gap_s,
        )  # fmt: skip
    first_id = max(s.id for s in segments) + 1
    kids = [
        Segment(id=first_id + i, start=a, end=b, parent=parent.id, round=round_no)
        for i, (a, b) in enumerate(children(parent.start, parent.end, frames))
    ]
    emit("expand", round=round_no, segment=parent.id, start=parent.start, end=parent.end, anchors=len(fixed))
    images = await round_images(ctx, settings, frames)
    heard = await hear(ctx, [Interval(k.start, k.end) for k in kids], Where("evaluate", round_no))
    values = {
        "question": state["question"],
        "choices": choices_block(state["choices"]),
        "duration": format_ts(ctx.atlas.duration, 0),
        "round": round_no,
        "segment": span(parent.start, parent.end),
        "count": len(frames),
        "frames": moments(frames),
        "children": children_block(kids),
        "history": history_block(state.get("rounds") or [], segments),
        "opened": opened_block(state.get("rounds") or [], segments),
        "speech": speech_lines(
            heard.subtitles, [Interval(parent.start, parent.end)], state["question"], state["choices"]
        ),
        "anchor_request": ctx.prompts.render("anchor_request.note", anchor=relation.anchor).strip() if seeking else "",
        "query_request": (
            ctx.prompts.render("query_request.note", queries=queries_block(held)).strip() + "\n" if asking else ""
        ),
    }
    repairs: list[Repair] = [*heard.repairs]
    scores: dict[int, tuple[float, str]] = {}
    seen_at: RelationAnchor | None = None
    ids = list(range(1, len(frames) + 1)) if seeking else []
    proposed: list[str] = []
    try:
        reply, cost = await ask(
            ctx, rewards_schema([k.id for k in kids], ids, asking), "evaluate", "evaluate", images, values,
            system=SYSTEM, thinker="searcher", meta={"round": round_no},
        )  # fmt: skip
        proposed = list(getattr(reply.value, "search_queries", []))
        for kid in kids:
            item = getattr(reply.value, child_key(kid.id))
            scores[kid.id] = (min(100, max(0, int(item.score))) / 100, item.explanation)
        named = [frames[i - 1] for i in getattr(reply.value, "anchor", []) if i in ids]
        seen_at = RelationAnchor.at(named[0]) if named else None
    except ModelReplyError as exc:
        fell_back = "every child scored 0 (the query score still counts)" + ("; no new queries" if asking else "")
        cost, repair = fallback(exc, "evaluate", round_no, fell_back)
        repairs.append(repair)
    kids = [
        k.model_copy(
            update={
                "reward": scores.get(k.id, (0.0, ""))[0],
                "explanation": scores.get(k.id, (0.0, "(not scored)"))[1],
                "score": query_score(
                    [a.phi for a in anchors if k.start <= a.time < k.end], settings.tau, settings.empty_score
                ),
            }
        )
        for k in kids
    ]
    beside = window_segment(relation, seen_at, ctx.atlas.duration, settings, first_id + len(kids), round_no)
    tree = [*[s for s in segments if s.id != parent.id], parent.model_copy(update={"expanded": True}), *kids]
    tree += [beside] if beside is not None else []
    pool, uncertainty = fused(tree, settings, shortest_opened(ctx, settings))
    worth = {s.id: s.fused if settings.uarf else s.reward for s in pool}  # a child too short to open: its r
    worth |= {k.id: k.reward for k in kids if k.id not in worth}
    seen = [
        Remembered(time=t, reward=(worth[kids[i].id] + worth[kids[i + 1].id]) / 2, round=round_no)
        for i, t in enumerate(frames)
    ]
    record = Round(
        index=round_no, segment=parent.id, frames=frames, anchor_frames=fixed, children=[k.id for k in kids],
        uncertainty=round(uncertainty, 4), proposed=proposed,
    )  # fmt: skip
    emit("scored", round=round_no, best=max((k.reward for k in kids), default=0.0), uncertainty=uncertainty)
    found: dict[str, Any] = {}
    if seen_at is not None:
        found = {"relation_anchor": seen_at, "window_segment": beside.id if beside is not None else None}
        emit("relation_anchor", round=round_no, time=seen_at.time)
    return {
        **found,
        "segments": [parent.model_copy(update={"expanded": True}), *kids, *([beside] if beside else []), *pool],
        "memory": remember(state.get("memory") or [], seen, settings.memory_frames),
        "rounds": [record],
        "cost": cost + heard.cost,
        "repairs": repairs,
        "round": round_no,
    }


def window_segment(
    relation: Relation, seen: RelationAnchor | None, duration: float, settings: EEASettings, id_: int, round_no: int
) -> Segment | None:
    """The window the relation names beside its anchor, as a candidate: one child of the whole video long.

    One expansion of the whole video resolves stretches that long, so what comes right after (or just
    before) the anchor lies within it. None when the anchor was not seen or the window is empty.
    """
    if seen is None:
        return None
    found = window(relation, seen, duration, duration / (settings.expand_frames + 1))
    if found is None:
        return None
    why = f"the window {relation.side} {relation.anchor} (seen at {seen.time:.1f} s)"
    return Segment(id=id_, start=found.start, end=found.end, round=round_no, explanation=why)
