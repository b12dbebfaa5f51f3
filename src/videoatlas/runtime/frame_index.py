"""A video's frame embedding index, and query vectors scored against it: built once per (video, model, fps, px).

EEA retrieves its anchors from it; Video-RLM's semantic anchors (``anchors``) score grid cells with it.

Frames are taken at ``index_fps`` (the middles of equal steps); a video that would give more than
``index_cap`` frames is indexed at ``index_cap / duration`` frames per second instead, and the run
records the rate it used. Each frame is sent to the embeddings endpoint as an image. With a run
store the index is kept there (:mod:`videoatlas.persistence.frame_index`): vectors are stored batch
by batch, the index is marked whole only after its last frame, a later build embeds only what is
missing, and a later run reads the whole index with no embedding call. Without a store (a run that
is not kept) the index lives in this process only. Either way this process keeps the last few
indexes it used, so the nodes of one run read it without going back to the database.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import structlog
from PIL import Image

from videoatlas.environment.render import encode_jpeg
from videoatlas.llm.embeddings import EmbeddingsClient
from videoatlas.persistence import frame_index as stored
from videoatlas.runtime.calls import emit
from videoatlas.runtime.context import AgentContext
from videoatlas.state.models import IndexInfo

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

log = structlog.get_logger(__name__)

BATCH = 32
"""Frames decoded, embedded and stored together."""
_KEPT = 4
"""Indexes this process keeps in memory."""
_LOADED: OrderedDict[str, FrameIndex] = OrderedDict()
_SEEN: dict[tuple[str, str], np.ndarray] = {}
"""Query vectors this process has, by (model, text) (for runs without a store)."""


class IndexSettings(Protocol):
    """The settings an agent that uses the index has (EEA's and Video-RLM's name them alike)."""

    @property
    def index_fps(self) -> float:
        """Frames per second of video the index holds (lowered to fit ``index_cap``)."""
        ...

    @property
    def index_cap(self) -> int:
        """Frames the index holds at most."""
        ...

    @property
    def index_px(self) -> int:
        """Long side of a frame sent to the embedding model."""
        ...

    @property
    def embedding_model(self) -> str:
        """The embedding model (empty: the chat model's id)."""
        ...

    @property
    def query_prefix(self) -> str:
        """Put before each query text (E5 models expect ``query: ``)."""
        ...


@dataclass(frozen=True, slots=True)
class IndexPlan:
    """Which moments the index holds."""

    fps: float
    times: list[float]
    note: str


@dataclass(frozen=True, slots=True)
class FrameIndex:
    """Frame times and their unit vectors."""

    times: np.ndarray
    vectors: np.ndarray

    def search(self, query: np.ndarray, top_k: int) -> list[tuple[float, float]]:
        """The ``top_k`` frames most similar to ``query`` (a unit vector), as (time, cosine), best first."""
        if len(self.times) == 0:
            return []
        sims = self.vectors @ query
        order = np.argsort(-sims, kind="stable")[:top_k]
        return [(float(self.times[i]), float(sims[i])) for i in order]


def plan_index(duration: float, fps: float, cap: int) -> IndexPlan:
    """The index's moments: ``fps`` frames per second, or fewer so that at most ``cap`` frames are taken."""
    count = max(1, int(duration * fps))
    note = ""
    if count > cap:
        fps, count = cap / duration, cap
        note = f"{duration:.0f} s at the asked rate is over the cap of {cap} frames: indexed at {fps:.4f} fps"
    step = duration / count
    return IndexPlan(fps=round(count / duration, 6), times=[(i + 0.5) * step for i in range(count)], note=note)


def embedding_model(ctx: AgentContext, settings: IndexSettings) -> str:
    """The embedding model the run uses: its setting, else the chat model's id."""
    return settings.embedding_model or ctx.vlm.settings.model


def embeddings_client(ctx: AgentContext, settings: IndexSettings) -> EmbeddingsClient:
    """A client for the run's embedding model (close it with ``aclose``)."""
    return EmbeddingsClient.for_endpoint(ctx.vlm.settings, embedding_model(ctx, settings))


async def frame_index(ctx: AgentContext, settings: IndexSettings) -> tuple[FrameIndex, IndexInfo]:
    """The video's index (from this process, the store, or built now) and what it took this run."""
    model = embedding_model(ctx, settings)
    plan = plan_index(ctx.atlas.duration, settings.index_fps, settings.index_cap)
    identity = ctx.atlas.source.identity
    key = stored.index_key(identity, model, plan.fps, settings.index_px)
    engine = ctx.tracer.store.engine if ctx.tracer is not None else None

    def info(build_s: float, embedded: int, reused: bool) -> IndexInfo:
        return IndexInfo(
            model=model, fps=plan.fps, frames=len(plan.times), build_s=build_s, embedded=embedded, reused=reused,
            note=plan.note,
        )  # fmt: skip

    if key in _LOADED:
        _LOADED.move_to_end(key)
        return _LOADED[key], info(0.0, 0, True)
    if engine is not None:
        whole = await asyncio.to_thread(stored.load_index, engine, key)
        if whole is not None:
            return _keep(key, FrameIndex(whole.times, whole.vectors)), info(0.0, 0, True)
        await asyncio.to_thread(stored.begin_index, engine, key, identity, model, plan.fps, len(plan.times))
        have = await asyncio.to_thread(stored.stored_frames, engine, key)
    else:
        have = set()
    began = time.perf_counter()
    built = await _build(ctx, settings, plan, engine, key, have)
    spent = time.perf_counter() - began
    if engine is not None:
        await asyncio.to_thread(stored.finish_index, engine, key)
        whole = await asyncio.to_thread(stored.load_index, engine, key)
        if whole is None:
            raise RuntimeError(f"the frame index {key[:12]} was stored but does not read back whole")
        built = FrameIndex(whole.times, whole.vectors)
    missing = len(plan.times) - len(have)
    log.info("frame_index_built", frames=len(plan.times), embedded=missing, resumed=len(have), seconds=round(spent, 2))
    return _keep(key, built), info(spent, missing, False)


def forget() -> None:
    """Drop the indexes and query vectors this process holds (it then reads them as a new process would)."""
    _LOADED.clear()
    _SEEN.clear()


def _keep(key: str, index: FrameIndex) -> FrameIndex:
    _LOADED[key] = index
    while len(_LOADED) > _KEPT:
        _LOADED.popitem(last=False)
    return index


async def _build(
    ctx: AgentContext, settings: IndexSettings, plan: IndexPlan, engine: Engine | None, key: str, have: set[int]
) -> FrameIndex:
    """Embed the frames not yet stored, batch by batch (each batch stored before the next is started)."""
    todo = [i for i in range(len(plan.times)) if i not in have]
    times = np.asarray(plan.times, dtype=np.float64)
    vectors: dict[int, np.ndarray] = {}
    client = embeddings_client(ctx, settings)
    try:
        for first in range(0, len(todo), BATCH):
            batch = todo[first : first + BATCH]
            began = time.perf_counter()
            frames = await ctx.atlas.source.aframes_at([plan.times[i] for i in batch], settings.index_px)
            rows: list[np.ndarray | None] = []
            for i, frame in zip(batch, frames, strict=True):
                times[i] = frame.time
                if frame.image is None:  # nothing decoded there: a vector that matches nothing
                    rows.append(None)
                    continue
                rows.append(await client.embed_image(encode_jpeg(Image.fromarray(frame.image))))
            dim = next((len(r) for r in rows if r is not None), 0) or next((len(v) for v in vectors.values()), 0)
            block = np.stack([r if r is not None else np.zeros(dim, np.float32) for r in rows])
            vectors.update(zip(batch, block, strict=True))
            if engine is not None:
                spent = time.perf_counter() - began
                await asyncio.to_thread(stored.store_vectors, engine, key, batch, times[batch].tolist(), block, spent)
            emit("index", done=len(have) + first + len(batch), frames=len(plan.times))
    finally:
        await client.aclose()
    if not vectors:
        return FrameIndex(times, np.zeros((len(times), 0), np.float32))
    dim = len(next(iter(vectors.values())))
    return FrameIndex(times, np.stack([vectors.get(i, np.zeros(dim, np.float32)) for i in range(len(times))]))


async def query_vectors(ctx: AgentContext, settings: IndexSettings, queries: Sequence[str]) -> tuple[np.ndarray, int]:
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
