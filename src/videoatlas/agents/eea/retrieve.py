"""Queries to anchors: each query embedded, matched against the frame index, hits merged and clustered in time.

Query vectors are kept like the index (in the run store, else in this process), so asking the same
queries again makes no embedding call. Queries are cleaned first: an empty one, or one that repeats
a query already held (ignoring case, spacing and punctuation), is dropped and the drop recorded.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

import numpy as np

from videoatlas.agents.eea.index import FrameIndex, embedding_model, embeddings_client
from videoatlas.agents.eea.search import cluster_anchors
from videoatlas.agents.eea.settings import EEASettings
from videoatlas.agents.eea.state import Anchor
from videoatlas.persistence import frame_index as stored
from videoatlas.runtime.context import AgentContext

_SEEN: dict[tuple[str, str], np.ndarray] = {}
"""Query vectors this process has, by (model, text) (for runs without a store)."""


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


async def query_vectors(ctx: AgentContext, settings: EEASettings, queries: Sequence[str]) -> tuple[np.ndarray, int]:
    """The queries' unit vectors (with the query prefix), and how many had to be embedded now."""
    model = embedding_model(ctx, settings)
    texts = [settings.query_prefix + q for q in queries]
    engine = ctx.tracer.store.engine if ctx.tracer is not None else None
    known = {t: _SEEN[(model, t)] for t in texts if (model, t) in _SEEN}
    if engine is not None and len(known) < len(texts):
        known |= await asyncio.to_thread(stored.load_text_vectors, engine, model, [t for t in texts if t not in known])
    todo = [t for t in dict.fromkeys(texts) if t not in known]
    if todo:
        client = embeddings_client(ctx, settings)
        try:
            fresh = await client.embed_texts(todo)
        finally:
            await client.aclose()
        known |= dict(zip(todo, fresh, strict=True))
        if engine is not None:
            await asyncio.to_thread(stored.store_text_vectors, engine, model, todo, fresh)
    for t in texts:
        _SEEN[(model, t)] = known[t]
    return np.stack([known[t] for t in texts]) if texts else np.zeros((0, 0), np.float32), len(todo)


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
