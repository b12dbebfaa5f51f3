"""Running one question through an agent's graph as a run: checkpointed, traced, leased; resumed; read back.

The run's record (its row, lease and tracer) is :mod:`.frame`'s; its parts (context, streaming the graph,
settling the row) are in :mod:`.execute`;
what a run produced is :class:`~videoatlas.runs.result.RunResult`.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import structlog
from langchain_core.language_models.chat_models import BaseChatModel

from videoatlas.agents.registry import get_agent, saved_snapshot
from videoatlas.environment.frames import FrameSource
from videoatlas.errors import BadInputError
from videoatlas.llm.settings import EndpointSettings
from videoatlas.logging import run_log
from videoatlas.persistence.db import redact_url, resolve_db_url
from videoatlas.persistence.store import RunRow, TraceStore
from videoatlas.runs.execute import has_step_left, prepare, run_traced, saver_for
from videoatlas.runs.frame import Progress, new_row, open_frame
from videoatlas.runs.result import RunResult, finished_values, result_from_state
from videoatlas.runtime.context import RunConfig

__all__ = ["Progress", "RunResult", "load_finished", "prepare", "resume_run", "run_question", "unfinished_run"]


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
    force: bool = False,
    source: FrameSource | None = None,
) -> RunResult:
    """Answer one question about one video as run ``run_id``: the one run frame, for new and resumed runs.

    With ``persist`` the run is checkpointed and traced in ``db_url``. A run id the store already holds
    is gone on with from its last checkpoint (its video must be the one it started on; a run stopped
    before its first checkpoint starts again from the question); any other id starts a new run. The
    run's lease is claimed first: a run held by a live process is refused (:class:`RunOwnedError`)
    unless ``force``. ``source``: ``video`` opened already (the front door probes it first); the run closes it.

    The checks of the question, the set-up and the pictures against the endpoint's image limit are
    the front door's (:func:`videoatlas.request.answer`): this runs what it is given.
    """
    thread = run_id or uuid.uuid4().hex[:12]
    async with open_frame(thread, db_url, persist, endpoint.patience_s, run_id is not None, force) as frame:
        prepared = await prepare(
            video, config, endpoint, subtitles, subtitle_offset, chat_model, frame.tracer, source, on_progress
        )
        try:
            identity = prepared.source.identity
            row = new_row(thread, prepared.context, identity, question, choices, video, subtitles, subtitle_offset)
            await frame.start(row, on_progress)
        except BaseException:
            await prepared.aclose()
            raise
        inputs = {"question": question, "choices": list(choices)}
        with structlog.contextvars.bound_contextvars(run_id=thread), run_log(thread):
            async with saver_for(frame.url, endpoint.patience_s) as saver:
                result = await run_traced(
                    frame.owned, thread, prepared, saver, inputs, frame.resumed, question, choices, on_progress
                )
        result.source = "resumed" if frame.resumed else "run"
        return result


def unfinished_run(run_id: str, db_url: str | None = None) -> RunRow:
    """The stored run ``run_id`` (or a unique prefix of it) that is left to finish; refused if none or finished."""
    url = resolve_db_url(db_url)
    store = TraceStore.shared(url)
    try:
        row = store.run(run_id)
    finally:
        store.release()
    if row is None:
        raise BadInputError(f"no run {run_id!r} in {redact_url(url)}")
    if row.status == "finished":
        raise BadInputError(f"run {row.id} already finished (answer: {row.answer or '(none)'}); nothing to resume")
    return row


async def resume_run(
    run_id: str,
    db_url: str | None = None,
    on_progress: Progress | None = None,
    chat_model: BaseChatModel | None = None,
    endpoint: EndpointSettings | None = None,
    force: bool = False,
) -> RunResult:
    """Go on with an interrupted run from its last checkpoint, on its stored question, video and configuration.

    ``endpoint`` None: the endpoint the run recorded (a run answered by the in-process stand-in needs
    one given). The entry points resume through the front door instead
    (:func:`videoatlas.request.resume_request`); this is the same frame for a caller with its own model.
    """
    row = await asyncio.to_thread(unfinished_run, run_id, db_url)
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
    return await run_question(
        row.video_path,
        row.question,
        row.choices,
        RunConfig.model_validate(row.config),
        settings,
        row.subtitles,
        row.subtitle_offset,
        on_progress,
        chat_model,
        db_url=db_url,
        run_id=row.id,
        force=force,
    )


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
        result.source = "db-cache"
        if row.status != "finished":
            store.update_run(row.id, **finished_values(result))
        return result
    finally:
        await asyncio.to_thread(store.release)
