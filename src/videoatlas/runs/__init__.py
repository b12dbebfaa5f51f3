"""Running one question through an agent's graph as a run: checkpointed, traced, leased; resumed; read back.

The run's parts (context, lease, streaming the graph, settling the row) are in :mod:`.execute`;
what a run produced is :class:`~videoatlas.runs.result.RunResult`.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import structlog
from langchain_core.language_models.chat_models import BaseChatModel

from videoatlas.agents.registry import check_images, get_agent, saved_snapshot
from videoatlas.errors import BadInputError
from videoatlas.llm.settings import EndpointSettings
from videoatlas.logging import run_log
from videoatlas.persistence.db import redact_url, resolve_db_url
from videoatlas.persistence.lease import LeaseTiming
from videoatlas.persistence.store import RunRow, TraceStore
from videoatlas.runs.execute import (
    Owned,
    Progress,
    claim,
    endpoint_record,
    has_step_left,
    prepare,
    run_traced,
    saver_for,
    settle,
)
from videoatlas.runs.result import RunResult, finished_values, result_from_state
from videoatlas.runtime.context import RunConfig
from videoatlas.runtime.tracing import RunTracer

__all__ = ["Progress", "RunResult", "load_finished", "prepare", "resume_run", "run_question"]


async def run_question(
    video: str | Path,
    question: str,
    choices: list[str],
    config: RunConfig,
    endpoint: EndpointSettings,
    subtitles: str | Path | None = None,
    subtitle_offset: float = 0.0,
    on_progress: Progress | None = None,
    chat_model: BaseChatModel | None = None,
    db_url: str | None = None,
    persist: bool = True,
    run_id: str | None = None,
) -> RunResult:
    """Answer one question about one video; with ``persist``, checkpointed and traced in ``db_url``.

    The agent checks its pictures against the endpoint's image limit first, so a run that could not
    show its first grid is refused before it starts (no model call, no run row). The question and
    its choices are the caller's to check (``ask`` does, with :func:`videoatlas.limits.check_question`;
    a benchmark's items run as they are written).
    """
    check_images(config, endpoint.max_image_pixels)
    thread = run_id or uuid.uuid4().hex[:12]
    url = resolve_db_url(db_url) if persist else None
    timing = LeaseTiming.from_env()
    # Store calls that touch the database run on a thread: on the event loop, waiting for SQLite's
    # write lock would block the checkpointer (same loop) that holds it.
    store = await asyncio.to_thread(TraceStore.shared, url, endpoint.patience_s) if url else None
    owned: Owned | None = None
    try:
        tracer = RunTracer(store, thread) if store is not None else None
        prepared = await prepare(video, config, endpoint, subtitles, subtitle_offset, chat_model, tracer)
        if store is not None:
            try:  # before the row is written: a run id in use by a live process is left alone
                owned = await claim(store, thread, timing)
            except BaseException:
                await prepared.aclose()
                raise
            prompts = prepared.context.prompts
            await asyncio.to_thread(
                store.start_run,
                RunRow(
                    id=thread,
                    status="running",
                    agent=config.agent,
                    question=question,
                    choices=list(choices),
                    video_path=str(Path(video).resolve()),
                    video_identity=prepared.source.identity,
                    config=config.model_dump(),
                    endpoint=endpoint_record(prepared.context.vlm.settings),
                    prompt_set=prompts.source,
                    prompt_sha=prompts.sha256,
                    templates={k: t.sha256 for k, t in prompts.templates.items()},
                    subtitles=str(Path(subtitles).resolve()) if subtitles else None,
                    subtitle_offset=subtitle_offset,
                    cost={},
                ),
            )
        if on_progress is not None:
            on_progress({"event": "run_started", "run_id": thread})
        inputs = {"question": question, "choices": list(choices)}
        with structlog.contextvars.bound_contextvars(run_id=thread), run_log(thread):
            async with saver_for(url, endpoint.patience_s) as saver:
                return await run_traced(owned, thread, prepared, saver, inputs, question, choices, on_progress)
    finally:
        if owned is not None:
            await settle(owned)  # a run that never started: give the lease back
        if store is not None:
            await asyncio.to_thread(store.release)


async def resume_run(
    run_id: str,
    db_url: str | None = None,
    on_progress: Progress | None = None,
    chat_model: BaseChatModel | None = None,
    endpoint: EndpointSettings | None = None,
    force: bool = False,
) -> RunResult:
    """Continue an interrupted run from its last checkpoint, rebuilding its context from the stored config.

    The run's lease is claimed first: a run held by a live process is refused
    (:class:`RunOwnedError`) unless ``force``; a stale one is taken over.
    """
    url = resolve_db_url(db_url)
    timing = LeaseTiming.from_env()
    store = await asyncio.to_thread(TraceStore.shared, url, endpoint.patience_s if endpoint else None)
    owned: Owned | None = None
    try:
        row = await asyncio.to_thread(store.run, run_id)
        if row is None:
            raise BadInputError(f"no run {run_id!r} in {redact_url(url)}")
        if row.status != "finished":
            owned = await claim(store, row.id, timing, force=force)
            row = await asyncio.to_thread(store.run, row.id)  # as it stands now that it is ours
        if row is None or row.status == "finished":
            answer = (row.answer if row is not None else None) or "(none)"
            raise BadInputError(f"run {run_id} already finished (answer: {answer}); nothing to resume")
        if endpoint is None and row.endpoint.get("standin"):
            raise BadInputError(
                f"run {row.id} was answered by the in-process stand-in, which stopped with its process: "
                "give an endpoint to resume it with (the CLI's `resume` starts the stand-in again)"
            )
        settings = endpoint or EndpointSettings.from_env(
            None,
            base_url=row.endpoint.get("base_url"),
            model=row.endpoint.get("model") or None,
            strict_schema=row.endpoint.get("strict_schema"),
        )
        config = RunConfig.model_validate(row.config)
        check_images(config, settings.max_image_pixels)
        tracer = RunTracer(store, row.id)
        prepared = await prepare(
            row.video_path, config, settings, row.subtitles, row.subtitle_offset, chat_model, tracer
        )
        if prepared.source.identity != row.video_identity:
            await prepared.aclose()
            raise BadInputError(f"{row.video_path} is not the video run {row.id} was started on (its content changed)")
        store.update_run(row.id, status="running", error=None)
        if on_progress is not None:
            on_progress({"event": "run_started", "run_id": row.id, "resumed": True})
        with structlog.contextvars.bound_contextvars(run_id=row.id), run_log(row.id):
            async with saver_for(url, settings.patience_s) as saver:
                return await run_traced(owned, row.id, prepared, saver, None, row.question, row.choices, on_progress)
    finally:
        if owned is not None:
            await settle(owned)  # refused or failed before running: give the lease back
        await asyncio.to_thread(store.release)


async def load_finished(run_id: str, db_url: str | None = None) -> RunResult | None:
    """The result of a finished run, read back from its final checkpoint (None: no run that finished).

    A run counts as finished when its last checkpoint has no task left, even if the process died
    before its row was marked finished. The evaluation runner uses this as a result cache shared by
    every output folder on one database.
    """
    url = resolve_db_url(db_url)
    store = await asyncio.to_thread(TraceStore.shared, url)
    try:
        row = await asyncio.to_thread(store.run, run_id)
        if row is None or row.id != run_id:
            return None
        snapshot = await saved_snapshot(url, row.agent, row.id)
        if not snapshot.values or has_step_left(snapshot):
            return None
        wall = float((row.cost or {}).get("wall_s", 0.0))
        final = dict(snapshot.values)
        extras = get_agent(row.agent).views.result_extras(final)
        result = result_from_state(row.id, row.question, row.choices, final, wall, [], extras)
        if row.status != "finished":
            store.update_run(row.id, **finished_values(result))
        return result
    finally:
        await asyncio.to_thread(store.release)
