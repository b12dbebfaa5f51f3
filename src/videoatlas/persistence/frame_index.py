"""Frame embedding indexes in the run store: read whole, written frame by frame, marked complete last.

A build stores each batch of vectors as it gets them, in its own transaction, so a build that
stops midway keeps what it had; the index's row says ``complete`` only after the last frame is in.
Readers take an index as whole only when it says so (:func:`load_index`); a builder resumes with
the frames already stored (:func:`stored_frames`). Two builders of one index do the same work
twice at worst: a vector stored twice is the same vector, and the second insert is skipped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from videoatlas.persistence.tables import FrameIndexRow, FrameVectorRow, TextVectorRow


@dataclass(frozen=True, slots=True)
class StoredIndex:
    """An index read from the store: frame times and unit vectors, in frame order."""

    times: np.ndarray
    vectors: np.ndarray
    build_s: float
    complete: bool


def index_key(video_identity: str, model: str, fps: float, px: int) -> str:
    """The key of the index of ``video_identity``'s frames by ``model`` at ``fps`` frames per second, ``px`` wide.

    The frame size is part of it: frames embedded smaller are another index (text too small to read at one
    size reads at a larger one), never one to reuse for it.
    """
    return hashlib.sha256(f"{video_identity}\0{model}\0{fps:.6f}\0{px}".encode()).hexdigest()


def text_key(model: str, text: str) -> str:
    """The key of ``text``'s vector by ``model``."""
    return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()


def _insert(engine: Engine):  # type: ignore[no-untyped-def]
    return sqlite_insert if engine.dialect.name == "sqlite" else pg_insert


def begin_index(engine: Engine, key: str, video_identity: str, model: str, fps: float, frames: int) -> None:
    """Make the index's row if it has none yet (a build that resumes finds it there)."""
    row = {"key": key, "video_identity": video_identity, "model": model, "fps": fps, "frames": frames}
    with Session(engine) as session, session.begin():
        session.execute(
            _insert(engine)(FrameIndexRow).values(**row, complete=False, build_s=0.0).on_conflict_do_nothing()
        )


def stored_frames(engine: Engine, key: str) -> set[int]:
    """The frame numbers the index already has a vector for."""
    with Session(engine) as session:
        return set(session.scalars(select(FrameVectorRow.frame).where(FrameVectorRow.index_key == key)))


def store_vectors(
    engine: Engine, key: str, frames: Sequence[int], times: Sequence[float], vectors: np.ndarray, spent_s: float
) -> None:
    """Keep a batch of frames' vectors (one transaction), and add ``spent_s`` to the build's time."""
    rows = [
        {"index_key": key, "frame": int(f), "time": float(t), "vector": np.asarray(v, dtype=np.float32).tobytes()}
        for f, t, v in zip(frames, times, vectors, strict=True)
    ]
    with Session(engine) as session, session.begin():
        if rows:
            session.execute(_insert(engine)(FrameVectorRow).values(rows).on_conflict_do_nothing())
        session.execute(
            update(FrameIndexRow).where(FrameIndexRow.key == key).values(build_s=FrameIndexRow.build_s + spent_s)
        )


def finish_index(engine: Engine, key: str) -> None:
    """Mark the index complete (call only once every frame's vector is stored)."""
    with Session(engine) as session, session.begin():
        session.execute(update(FrameIndexRow).where(FrameIndexRow.key == key).values(complete=True))


def load_index(engine: Engine, key: str, partial: bool = False) -> StoredIndex | None:
    """The index under ``key``: None when there is none, or when it is unfinished and ``partial`` is False."""
    with Session(engine) as session:
        head = session.get(FrameIndexRow, key)
        if head is None or not (head.complete or partial):
            return None
        rows = session.execute(
            select(FrameVectorRow.time, FrameVectorRow.vector)
            .where(FrameVectorRow.index_key == key)
            .order_by(FrameVectorRow.frame)
        ).all()
        if head.complete and len(rows) != head.frames:
            return None  # a row marked complete without all its frames is not used as whole
        times = np.asarray([r[0] for r in rows], dtype=np.float64)
        vectors = (
            np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows]) if rows else np.zeros((0, 0), np.float32)
        )
        return StoredIndex(times, vectors, float(head.build_s), bool(head.complete))


def load_text_vectors(engine: Engine, model: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
    """The stored vectors of those of ``texts`` that have one, by text."""
    keys = {text_key(model, t): t for t in texts}
    with Session(engine) as session:
        rows = session.execute(select(TextVectorRow.key, TextVectorRow.vector).where(TextVectorRow.key.in_(keys))).all()
    return {keys[k]: np.frombuffer(v, dtype=np.float32) for k, v in rows}


def store_text_vectors(engine: Engine, model: str, texts: Sequence[str], vectors: np.ndarray) -> None:
    """Keep texts' vectors (a text stored before keeps its first vector)."""
    rows = [
        {"key": text_key(model, t), "model": model, "text": t, "vector": np.asarray(v, dtype=np.float32).tobytes()}
        for t, v in zip(texts, vectors, strict=True)
    ]
    if not rows:
        return
    with Session(engine) as session, session.begin():
        session.execute(_insert(engine)(TextVectorRow).values(rows).on_conflict_do_nothing())
