"""Queries to anchors: each query embedded, matched against the frame index and what is said, hits merged in time.

Beside the frames, the stretches of speech heard so far (the speech track, or a subtitle file) are
embedded as text and matched against the same query vectors: a stretch that says what a query asks
for anchors the search at its middle, as a frame that shows it does.

Query vectors come from :func:`videoatlas.runtime.frame_index.query_vectors` (kept like the index, so
asking the same queries again makes no embedding call). Queries are cleaned first: an empty one, or
one that repeats a query already held (ignoring case, spacing and punctuation), is dropped and the
drop recorded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from videoatlas.agents.eea.search import cluster_anchors
from videoatlas.agents.eea.settings import EEASettings
from videoatlas.agents.eea.state import Anchor
from videoatlas.environment.subtitles import Subtitles
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.frame_index import FrameIndex, query_vectors


def _norm(query: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", query.lower()).split())


def clean_queries(proposed: Sequence[str], held: Sequence[str]) -> tuple[list[str], list[str]]:
    """(kept, dropped): queries neither empty nor repeating one held or one kept before them."""
    seen = {_norm(q) for q in held}
    kept: list[str] = []
    dropped: list[str] = []
    for query in proposed:
        key = _norm(query)
        if not key or key in seen:
            dropped.append(query)
            continue
        seen.add(key)
        kept.append(" ".join(query.split()))
    return kept, dropped


def search_hits(index: FrameIndex, vectors: np.ndarray, settings: EEASettings) -> list[tuple[float, float]]:
    """Every query's ``top_k`` clips, as (time, similarity): the best frame of each of its best clusters.

    The paper retrieves clips and clusters them in time. The index holds single frames, and one long shot
    holds many: a query's ``top_k`` best frames were neighbours in the shot that matched best (a badge
    shown five times, twenty seconds each, gave eight hits in two of its showings and none in the other
    three). So a query takes as many frames as ``top_k`` clips of ``cluster_gap_s`` hold at the index's
    rate, clusters them as the anchors are clustered, and keeps its ``top_k`` best clusters. A query that
    every frame matches alike (a place name on screen throughout) still gives one hit, not a chain of them.
    """
    per_clip = max(1, math.ceil(settings.cluster_gap_s * index_rate(index)))
    hits: list[tuple[float, float]] = []
    for vector in vectors:
        clusters = cluster_anchors(index.search(vector, settings.top_k * per_clip), settings.cluster_gap_s)
        hits.extend(sorted(clusters, key=lambda a: (-a[1], a[0]))[: settings.top_k])
    return hits


def index_rate(index: FrameIndex) -> float:
    """Frames per second of video the index holds (1.0 for an index of fewer than two frames)."""
    times = index.times
    if len(times) < 2 or float(times[-1]) <= float(times[0]):
        return 1.0
    return (len(times) - 1) / (float(times[-1]) - float(times[0]))


async def speech_hits(
    ctx: AgentContext, settings: EEASettings, vectors: np.ndarray, said: Subtitles | None
) -> tuple[list[tuple[float, float]], int]:
    """Every query's ``top_k`` stretches of speech, as (middle time, similarity), and the texts embedded now."""
    lines = list(said.lines) if said is not None else []
    if not lines or len(vectors) == 0:
        return [], 0
    spoken, embedded = await query_vectors(ctx, settings, [ln.text for ln in lines])
    out: list[tuple[float, float]] = []
    for row in vectors @ spoken.T:
        for i in np.argsort(-row, kind="stable")[: settings.top_k]:
            out.append(((lines[i].start + lines[i].end) / 2, float(row[i])))
    return out, embedded


def merge_hits(old: Sequence[tuple[float, float]], new: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """One hit per moment (the best similarity any query gave it), in time order."""
    best: dict[float, float] = {}
    for t, phi in [*old, *new]:
        key = round(float(t), 3)
        best[key] = max(float(phi), best.get(key, -1.0))
    return sorted(best.items())


def anchors_of(hits: Sequence[tuple[float, float]], gap_s: float) -> list[Anchor]:
    """The anchors of the hits: each time cluster's best frame."""
    return [Anchor(time=t, phi=phi) for t, phi in cluster_anchors(hits, gap_s)]
