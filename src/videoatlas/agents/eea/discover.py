"""The start: the question turned into search queries, the frame index built or reused, the first anchors.

One text call asks for 1-5 queries; each is matched against the index and against what is said
over the whole video (the speech track heard chunk by chunk as the frames are indexed, spread over
a long video: ``speech_index_chunks``); the hits, clustered in time, give the anchors. The
first segment to expand is the whole video. The same call says the question's time relation ("right
after the banner"); when it names an anchor, that phrase is the first query, and its own hits are
kept apart: they are expanded first, until the anchor is seen.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.eea.retrieve import anchors_of, clean_queries, merge_hits, search_hits, speech_hits
from videoatlas.agents.eea.schemas import queries_schema
from videoatlas.agents.eea.settings import eea
from videoatlas.agents.eea.state import EEAState, Segment
from videoatlas.agents.eea.views import SYSTEM
from videoatlas.agents.relation import Relation, relation_of
from videoatlas.environment.geometry import Interval
from videoatlas.environment.speech import track_spans
from videoatlas.errors import ModelReplyError
from videoatlas.runtime.calls import ask, choices_block, emit, fallback, hear
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.frame_index import frame_index, query_vectors
from videoatlas.runtime.speech import Where
from videoatlas.state.models import Repair

ROOT = 1
"""The id of the segment that is the whole video."""


async def discover(state: EEAState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Ask for the first queries, build or reuse the index, retrieve, and anchor."""
    ctx = runtime.context
    settings = eea(ctx)
    values = {"question": state["question"], "choices": choices_block(state["choices"])}
    emit("discover")
    repairs: list[Repair] = []
    relation = Relation()
    try:
        reply, cost = await ask(
            ctx, queries_schema(1, 5, relation=True), "discover", "discover", [], values, system=SYSTEM,
            thinker="searcher",
        )  # fmt: skip
        proposed: list[str] = list(reply.value.search_queries)  # type: ignore[attr-defined]
        relation = relation_of(reply.value)
    except ModelReplyError as exc:
        # Without usable queries the question itself is the one query.
        cost, repair = fallback(exc, "discover", 0, "the question itself as the only query")
        proposed, repairs = [state["question"]], [repair]
    # The anchor is retrieved first: its phrase leads the queries.
    queries, dropped = clean_queries([relation.anchor, *proposed] if relation.anchored else proposed, [])
    if dropped:
        repairs.append(Repair(node="discover", round=0, kind="dropped", detail=_dropped(dropped)))
    if not queries:
        queries = [state["question"]]
        repairs.append(Repair(node="discover", round=0, kind="fallback", detail="no query left: the question used"))
    index, info = await frame_index(ctx, settings)
    vectors, embedded = await query_vectors(ctx, settings, queries)
    # What is said anchors the search too: the track is heard for it as the frames are indexed, over the
    # whole video (spread over a long one), not only the sample a first look at the whole video hears.
    duration = ctx.atlas.duration
    listened = track_spans(duration, settings.speech_index_chunks) or [Interval(0.0, duration)]
    heard = await hear(ctx, listened, Where("discover", 0))
    repairs.extend(heard.repairs)
    spoken, texts = await speech_hits(ctx, settings, vectors, heard.subtitles)
    hits = merge_hits([], [*search_hits(index, vectors, settings), *spoken])
    led = relation.anchored and queries[:1] == [" ".join(relation.anchor.split())]
    anchor_hits = merge_hits([], search_hits(index, vectors[:1], settings)) if led else []
    anchors = anchors_of(hits, settings.cluster_gap_s)
    emit("anchors", queries=len(queries), anchors=len(anchors), index_frames=info.frames, reused=info.reused)
    root = Segment(id=ROOT, start=0.0, end=duration)
    return {
        "queries": queries,
        "hits": hits,
        "anchors": anchors,
        "segments": [root],
        "memory": [],
        "selected": ROOT,
        "index": info,
        "index_frames": info.frames,
        "index_s": round(info.build_s, 3),
        "embedded": info.embedded + embedded + texts,
        "relation": relation,
        "anchor_hits": anchor_hits,
        "relation_anchor": None,
        "window_segment": None,
        "cost": cost + heard.cost,
        "repairs": repairs,
        "round": 0,
    }


def _dropped(queries: list[str]) -> str:
    return "empty or repeated queries dropped: " + "; ".join(repr(q) for q in queries)
