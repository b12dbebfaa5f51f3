"""The trace store's tables (SQLAlchemy 2.0 declarative): runs, node events, model calls, and images.

Prefixed ``va_`` so they live beside LangGraph's checkpoint tables in one database. The lease table
is :mod:`videoatlas.persistence.lease`'s own; writing is :mod:`~videoatlas.persistence.store`'s,
reading :mod:`~videoatlas.persistence.queries`'.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Integer, LargeBinary, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utc_now() -> datetime:
    """Now, timezone-aware (every stored time is UTC)."""
    return datetime.now(UTC)


def aware(when: datetime | None) -> datetime | None:
    """A stored time, timezone-aware: SQLite gives back naive datetimes (stored as UTC), PostgreSQL aware ones."""
    if when is None:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


class Base(DeclarativeBase):
    """Tables of the trace store (prefixed ``va_`` to live beside LangGraph's checkpoint tables)."""


class RunRow(Base):
    """One question asked of one video."""

    __tablename__ = "va_runs"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    status: Mapped[str] = mapped_column(String(16), index=True)
    agent: Mapped[str] = mapped_column(String(32))
    question: Mapped[str] = mapped_column(Text)
    choices: Mapped[list[str]] = mapped_column(JSON)
    video_path: Mapped[str] = mapped_column(Text)
    video_identity: Mapped[str] = mapped_column(String(64))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    endpoint: Mapped[dict[str, Any]] = mapped_column(JSON)
    prompt_set: Mapped[str] = mapped_column(Text)
    prompt_sha: Mapped[str] = mapped_column(String(32))
    templates: Mapped[dict[str, str]] = mapped_column(JSON)
    subtitles: Mapped[str | None] = mapped_column(Text, nullable=True)
    subtitle_offset: Mapped[float] = mapped_column(Float, default=0.0)
    answer: Mapped[str | None] = mapped_column(Text, nullable=True)
    answer_index: Mapped[int | None] = mapped_column(Integer, nullable=True)
    reasoning: Mapped[str | None] = mapped_column(Text, nullable=True)
    cost: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    stop_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


class InRun:
    """Where a traced thing happened (a node event, a model call): its run, node, worker and round."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("va_runs.id"), index=True)
    node: Mapped[str] = mapped_column(String(64))
    worker: Mapped[str | None] = mapped_column(String(32), nullable=True)
    round: Mapped[int | None] = mapped_column(Integer, nullable=True)


class NodeEventRow(InRun, Base):
    """One node execution (Master node or a worker's step node)."""

    __tablename__ = "va_node_events"
    phase: Mapped[str] = mapped_column(String(8))
    """start or end."""
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    duration_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    summary_in: Mapped[str | None] = mapped_column(Text, nullable=True)
    summary_out: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


class ModelCallRow(InRun, Base):
    """One structured model call and how it ended."""

    __tablename__ = "va_model_calls"
    step: Mapped[int | None] = mapped_column(Integer, nullable=True)
    schema: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    latency_s: Mapped[float] = mapped_column(Float)
    prompt_tokens: Mapped[int] = mapped_column(Integer)
    completion_tokens: Mapped[int] = mapped_column(Integer)
    cached_tokens: Mapped[int] = mapped_column(Integer)
    images: Mapped[list[str]] = mapped_column(JSON)
    outcome: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer)
    parse_errors: Mapped[list[str]] = mapped_column(JSON)
    reply_text: Mapped[str] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    template: Mapped[str | None] = mapped_column(Text, nullable=True)
    role: Mapped[str | None] = mapped_column(String(32), nullable=True)
    thinking: Mapped[bool | None] = mapped_column(nullable=True)
    """What the call asked of a reasoning model (None: nothing, the server's default)."""
    reasoning: Mapped[str | None] = mapped_column(Text, nullable=True)
    reasoning_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    reasoning_estimated: Mapped[bool | None] = mapped_column(nullable=True)


class ArtifactRow(Base):
    """A rendered image the model saw, stored once by content hash."""

    __tablename__ = "va_artifacts"
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(64))
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class FrameIndexRow(Base):
    """An embedding index of one video's frames, by one model, at one frame rate (built once, then reused).

    ``complete`` turns true only once every frame's vector is stored: an index a build left
    unfinished is never read as whole, and the next build embeds only the frames it lacks.
    """

    __tablename__ = "va_frame_indexes"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    """sha256 of (video identity, model, fps, frame size): see :func:`videoatlas.persistence.frame_index.index_key`."""
    video_identity: Mapped[str] = mapped_column(String(64), index=True)
    model: Mapped[str] = mapped_column(Text)
    fps: Mapped[float] = mapped_column(Float)
    frames: Mapped[int] = mapped_column(Integer)
    """Frames the whole index holds."""
    complete: Mapped[bool] = mapped_column(Boolean, default=False)
    build_s: Mapped[float] = mapped_column(Float, default=0.0)
    """Seconds spent building it, over every attempt."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)


class FrameVectorRow(Base):
    """One frame's vector in a :class:`FrameIndexRow` (float32 bytes)."""

    __tablename__ = "va_frame_vectors"
    index_key: Mapped[str] = mapped_column(ForeignKey("va_frame_indexes.key"), primary_key=True)
    frame: Mapped[int] = mapped_column(Integer, primary_key=True)
    """The frame's number in the index (0 first)."""
    time: Mapped[float] = mapped_column(Float)
    """The decoded frame's time in the video, seconds."""
    vector: Mapped[bytes] = mapped_column(LargeBinary)


class TextVectorRow(Base):
    """A text's vector by one embedding model (search queries, embedded once)."""

    __tablename__ = "va_text_vectors"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    """sha256 of (model, text): see :func:`videoatlas.persistence.frame_index.text_key`."""
    model: Mapped[str] = mapped_column(Text)
    text: Mapped[str] = mapped_column(Text)
    vector: Mapped[bytes] = mapped_column(LargeBinary)


class SpeechChunkRow(Base):
    """What one chunk of a video's sound track said, as one speech model heard it (transcribed once, then reused).

    A chunk is stored whole once its transcription is done, so a pass that stops midway keeps the
    chunks it finished and the next run transcribes only the rest.
    """

    __tablename__ = "va_speech_chunks"
    track_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    """sha256 of (video identity, model, chunk length): see :func:`videoatlas.persistence.speech.track_key`."""
    chunk: Mapped[int] = mapped_column(Integer, primary_key=True)
    """The chunk's number (0 first; see :mod:`videoatlas.environment.speech`)."""
    video_identity: Mapped[str] = mapped_column(String(64), index=True)
    model: Mapped[str] = mapped_column(Text)
    start: Mapped[float] = mapped_column(Float)
    end: Mapped[float] = mapped_column(Float)
    segments: Mapped[list[Any]] = mapped_column(JSON)
    """``[start, end, text]`` per stretch of speech, in video seconds."""
    timed: Mapped[bool] = mapped_column(Boolean, default=True)
    """Whether the server gave segment times (False: placed by the windows sent)."""
    requests: Mapped[int] = mapped_column(Integer, default=0)
    audio_s: Mapped[float] = mapped_column(Float, default=0.0)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)
    """Seconds the transcription took."""
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utc_now)
