"""Queries to anchors: each query embedded, matched against the frame index, hits merged and clustered in time.

Query vectors come from :func:`videoatlas.runtime.frame_index.query_vectors` (kept like the index, so
asking the same queries again makes no embedding call). Queries are cleaned first: an empty one, or
one that repeats a query already held (ignoring case, spacing and punctuation), is dropped and the
drop recorded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from videoatlas.agents.eea.search import cluster_anchors
from videoatlas.agents.eea.state import Anchor
from videoatlas.runtime.frame_index import FrameIndex


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


def search_hits(index: FrameIndex, vectors: np.ndarray, top_k: int) -> list[tuple[float, float]]:
    """Every query's ``top_k`` frames, as (time, similarity)."""
    return [hit for vector in vectors for hit in index.search(vector, top_k)]


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
