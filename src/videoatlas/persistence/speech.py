"""Speech track chunks in the run store: each chunk of a video's sound track, as one model heard it, stored once.

Rows are keyed by the track (video content, speech model, chunk length) and the chunk's number. A
chunk is written in its own transaction as soon as it is transcribed, so an interrupted pass keeps
what it finished. Two processes that transcribe one chunk at once store it once: the second insert
is skipped (the first text stands).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from videoatlas.persistence.tables import SpeechChunkRow


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """One chunk read back: its stretches of speech (video seconds) and how it was heard."""

    chunk: int
    segments: tuple[tuple[float, float, str], ...]
    timed: bool
    requests: int
    audio_s: float
    seconds: float


def track_key(video_identity: str, model: str, chunk_s: float) -> str:
    """The key of ``video_identity``'s speech track as ``model`` hears it in chunks of ``chunk_s`` seconds."""
    return hashlib.sha256(f"speech\0{video_identity}\0{model}\0{chunk_s:.3f}".encode()).hexdigest()


def load_chunks(engine: Engine, key: str, chunks: Iterable[int] | None = None) -> dict[int, StoredChunk]:
    """The stored chunks of the track ``key`` (those of ``chunks`` only, when given), by number."""
    query = select(SpeechChunkRow).where(SpeechChunkRow.track_key == key)
    if chunks is not None:
        query = query.where(SpeechChunkRow.chunk.in_(list(chunks)))
    with Session(engine) as session:
        rows = session.scalars(query).all()
        return {
            r.chunk: StoredChunk(
                r.chunk,
                tuple((float(s[0]), float(s[1]), str(s[2])) for s in r.segments or []),
                bool(r.timed),
                int(r.requests),
                float(r.audio_s),
                float(r.seconds),
            )
            for r in rows
        }


def store_chunk(
    engine: Engine,
    key: str,
    video_identity: str,
    model: str,
    span: tuple[float, float],
    heard: StoredChunk,
) -> None:
    """Keep one transcribed chunk (one transaction; a chunk stored before keeps its first text)."""
    row = {
        "track_key": key,
        "chunk": heard.chunk,
        "video_identity": video_identity,
        "model": model,
        "start": span[0],
        "end": span[1],
        "segments": [[a, b, text] for a, b, text in heard.segments],
        "timed": heard.timed,
        "requests": heard.requests,
        "audio_s": heard.audio_s,
        "seconds": heard.seconds,
    }
    insert = sqlite_insert if engine.dialect.name == "sqlite" else pg_insert
    with Session(engine) as session, session.begin():
        session.execute(insert(SpeechChunkRow).values(**row).on_conflict_do_nothing())


def stored_count(engine: Engine, keys: Sequence[str]) -> int:
    """How many chunks the tracks ``keys`` have stored."""
    with Session(engine) as session:
        return len(session.scalars(select(SpeechChunkRow.chunk).where(SpeechChunkRow.track_key.in_(list(keys)))).all())
