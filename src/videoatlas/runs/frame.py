"""A run's record while it runs: its row in the store, its lease and its tracer, opened and settled in one place.

:func:`open_frame` gives the run frame of :func:`~videoatlas.runs.run_question`: the store opened, the run
looked up (a stored id is gone on with), its lease claimed and renewed, a tracer over the store; on the
way out the lease is given back (a run that never started) and the store released. What runs inside it
is :mod:`videoatlas.runs.execute`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from sqlalchemy.exc import SQLAlchemyError

from videoatlas.errors import BadInputError, DatabaseDownError
from videoatlas.llm.settings import EndpointSettings
from videoatlas.persistence.db import resolve_db_url
from videoatlas.persistence.lease import Heartbeat, LeaseTiming
from videoatlas.persistence.store import RunRow, TraceStore
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.tracing import RunTracer

log = structlog.get_logger(__name__)

Progress = Callable[[dict[str, Any]], None]
"""Receives each progress event of a run: its start, each model call, what its agent's nodes emit."""


@dataclass(slots=True)
class Owned:
    """A run this process holds the lease of (see :mod:`videoatlas.persistence.lease`)."""

    store: TraceStore
    run_id: str
    owner: str
    heartbeat: Heartbeat
    settled: bool = False

    def stop_on_loss(self, task: asyncio.Future[Any]) -> None:
        """Cancel ``task`` (the run's graph) should the lease be lost to another process."""
        loop = asyncio.get_running_loop()

        def stop_the_run() -> None:  # called from the heartbeat's thread
            with contextlib.suppress(RuntimeError):  # the loop already closed: the run is over anyway
                loop.call_soon_threadsafe(task.cancel)

        self.heartbeat.watch(stop_the_run)


async def claim(store: TraceStore, run_id: str, timing: LeaseTiming, force: bool = False) -> Owned:
    """Take the run's lease (a live owner's only with ``force``) and start renewing it."""
    owner = await asyncio.to_thread(store.claim_run, run_id, timing, force=force)
    return Owned(store, run_id, owner, Heartbeat(store.engine, run_id, owner, timing))


async def settle(owned: Owned, **values: Any) -> None:
    """Write the run's final row (if any) and give the lease back, unless another process took the run.

    A database that stays away past the store's patience leaves the row as it was: the run then
    shows as ``stale`` once its lease lapses, and is resumed like an interrupted one. That is logged,
    not raised: whatever stopped the run is what its caller hears about.
    """
    if owned.settled:
        return
    owned.settled = True
    owned.heartbeat.stop()
    try:
        kept = await asyncio.to_thread(owned.store.settle_run, owned.run_id, owned.owner, **values)
    except (DatabaseDownError, SQLAlchemyError) as exc:
        log.warning("run_not_settled", run_id=owned.run_id, status=values.get("status"), error=str(exc)[:300])
        return
    if not kept:
        log.warning("run_taken_over", run_id=owned.run_id, detail="another process holds the run; nothing written")


def endpoint_record(settings: EndpointSettings) -> dict[str, Any]:
    """What is stored about the endpoint: never the API key; for the in-process stand-in, that it was one."""
    record: dict[str, Any] = {
        "base_url": settings.base_url,
        "model": settings.model,
        "timeout_s": settings.timeout_s,
        "strict_schema": settings.strict_schema,
    }
    if settings.standin:
        record.update(standin=True, max_image_pixels=settings.max_image_pixels, max_images=settings.max_images)
    return record


@dataclass(slots=True)
class RunFrame:
    """One run's record: where it is kept (``url`` None: nowhere), its stored row if gone on with, lease, tracer."""

    run_id: str
    url: str | None
    store: TraceStore | None
    existing: RunRow | None
    owned: Owned | None
    tracer: RunTracer | None

    @property
    def resumed(self) -> bool:
        """Whether the run goes on from a stored one."""
        return self.existing is not None

    async def start(self, row: RunRow, on_progress: Progress | None) -> None:
        """Mark the run as running, then tell ``on_progress`` it started.

        A new run's ``row`` is written; a resumed run's row is set back to running.
        A resumed run must be on the video it started on (its content identity, not only its path).
        """
        if self.store is None:
            pass
        elif self.existing is None:
            await asyncio.to_thread(self.store.start_run, row)
        elif row.video_identity != self.existing.video_identity:
            raise BadInputError(
                f"{self.existing.video_path} is not the video run {self.run_id} was started on (its content changed)"
            )
        else:
            await asyncio.to_thread(self.store.update_run, self.run_id, status="running", error=None)
        if on_progress is not None:
            on_progress({"event": "run_started", "run_id": self.run_id, **({"resumed": True} if self.resumed else {})})


@contextlib.asynccontextmanager
async def open_frame(
    run_id: str, db_url: str | None, persist: bool, patience_s: float | None, stored: bool, force: bool
) -> AsyncIterator[RunFrame]:
    """The frame of run ``run_id``, kept in ``db_url`` when ``persist``; ``stored``: the id may name a stored run.

    The lease is claimed before anything else: a run id in use by a live process is refused
    (:class:`~videoatlas.errors.RunOwnedError`, unless ``force``) before its endpoint is called.
    """
    url = resolve_db_url(db_url) if persist else None
    timing = LeaseTiming.from_env()
    # Store calls that touch the database run on a thread: on the event loop, waiting for SQLite's
    # write lock would block the checkpointer (same loop) that holds it.
    store = await asyncio.to_thread(TraceStore.shared, url, patience_s) if url else None
    owned: Owned | None = None
    try:
        existing = await asyncio.to_thread(store.run, run_id) if store is not None and stored else None
        if existing is not None and existing.id != run_id:  # a longer id that starts like this one
            existing = None
        if store is not None:
            owned = await claim(store, run_id, timing, force=force)
        tracer = RunTracer(store, run_id) if store is not None else None
        yield RunFrame(run_id, url, store, existing, owned, tracer)
    finally:
        if owned is not None:
            await settle(owned)  # a run that never started: give the lease back
        if store is not None:
            await asyncio.to_thread(store.release)


def new_row(
    run_id: str,
    context: AgentContext,
    identity: str,
    question: str,
    choices: list[str],
    video: str | Path,
    subtitles: str | Path | None,
    subtitle_offset: float,
) -> RunRow:
    """The row a run starts with: what was asked, of which video, with which configuration and prompts."""
    config = context.config
    prompts = context.prompts
    return RunRow(
        id=run_id,
        status="running",
        agent=config.agent,
        question=question,
        choices=list(choices),
        video_path=str(Path(video).resolve()),
        video_identity=identity,
        config=config.model_dump(),
        endpoint=endpoint_record(context.vlm.settings),
        prompt_set=prompts.source,
        prompt_sha=prompts.sha256,
        templates={k: t.sha256 for k, t in prompts.templates.items()},
        subtitles=str(Path(subtitles).resolve()) if subtitles else None,
        subtitle_offset=subtitle_offset,
        cost={},
    )
