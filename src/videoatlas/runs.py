"""Running one question through the Video-RLM graph: build the context, stream progress, collect the result."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog
from langchain_core.language_models.chat_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from videoatlas import limits
from videoatlas.agents.registry import all_agents, get_agent, saved_snapshot, settings_of
from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.cache import RenderCache
from videoatlas.environment.concat import open_source
from videoatlas.environment.frames import FrameSource
from videoatlas.environment.render import evidence_label
from videoatlas.environment.subtitles import load_subtitles
from videoatlas.errors import BadInputError, NothingToResumeError, RunOwnedError
from videoatlas.llm.chat_model import OpenAICompatibleChat
from videoatlas.llm.client import VLMClient
from videoatlas.llm.records import CallRecord
from videoatlas.llm.settings import EndpointSettings
from videoatlas.logging import run_log
from videoatlas.paths import render_cache_dir
from videoatlas.persistence.checkpoint import open_checkpointer
from videoatlas.persistence.db import redact_url, resolve_db_url
from videoatlas.persistence.lease import Heartbeat, LeaseTiming
from videoatlas.persistence.store import RunRow, TraceStore
from videoatlas.runtime.context import AgentContext, RunConfig
from videoatlas.runtime.stopping import stop_signal
from videoatlas.runtime.tracing import RunTracer
from videoatlas.state.models import Cost, Evidence

log = structlog.get_logger(__name__)

Progress = Callable[[dict[str, Any]], None]


@dataclass(slots=True)
class RunResult:
    """What a question's run produced, and what it cost."""

    run_id: str
    question: str
    choices: list[str]
    answer: str
    answer_index: int | None
    reasoning: str
    evidence: list[Evidence]
    cited: list[str]
    cost: Cost
    rounds: int
    stop_reason: str
    search_task: str
    traversal: str
    wall_s: float
    records: list[CallRecord] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def grounded(self) -> bool:
        """Whether the answer rests on evidence the final decision cited (False: a pick without evidence)."""
        return bool(self.answer) and bool(self.cited)

    @property
    def cache_hit_rate(self) -> float:
        """Share of prompt tokens the server reported as cached."""
        return self.cost.cached_tokens / self.cost.prompt_tokens if self.cost.prompt_tokens else 0.0

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {
            "run_id": self.run_id,
            "question": self.question,
            "choices": self.choices,
            "answer": self.answer,
            "answer_index": self.answer_index,
            "reasoning": self.reasoning,
            "evidence": [
                {
                    "label": evidence_label(i),
                    "time": e.time,
                    "interval": [e.start, e.end],
                    "cell": e.cell,
                    "depth": e.depth,
                    "description": e.description,
                    "confidence": e.confidence,
                    "subtitle": e.subtitle,
                    "cited": e.id in self.cited,
                }
                for i, e in enumerate(self.evidence)
            ],
            "cost": {
                **self.cost.summary(),
                "cache_hit_rate": round(self.cache_hit_rate, 4),
            },
            "grounded": self.grounded,
            "repairs": [r.model_dump() for r in self.state.get("repairs", [])],
            "rounds": self.rounds,
            "stop_reason": self.stop_reason,
            "search_task": self.search_task,
            "traversal": self.traversal,
            "wall_s": round(self.wall_s, 3),
        }


@dataclass(slots=True)
class _Prepared:
    context: AgentContext
    source: FrameSource
    model: BaseChatModel
    owns_model: bool
    records: list[CallRecord]

    async def aclose(self) -> None:
        self.source.close()
        if self.owns_model and isinstance(self.model, OpenAICompatibleChat):
            await self.model.aclose()


@dataclass(slots=True)
class _Owned:
    """A run this process holds the lease of (see :mod:`videoatlas.persistence.lease`)."""

    store: TraceStore
    run_id: str
    owner: str
    heartbeat: Heartbeat
    settled: bool = False


async def _claim(store: TraceStore, run_id: str, timing: LeaseTiming, force: bool = False) -> _Owned:
    owner = await asyncio.to_thread(store.claim_run, run_id, timing, force=force)
    return _Owned(store, run_id, owner, Heartbeat(store.engine, run_id, owner, timing))


async def _settle(owned: _Owned, **values: Any) -> None:
    """Write the run's final row (if any) and give the lease back, unless another process took the run."""
    if owned.settled:
        return
    owned.settled = True
    owned.heartbeat.stop()
    if not await asyncio.to_thread(owned.store.settle_run, owned.run_id, owned.owner, **values):
        log.warning("run_taken_over", run_id=owned.run_id, detail="another process holds the run; nothing written")


def _stopped_by(exc: BaseException) -> str:
    """The error recorded for a run that was stopped: ``interrupted by SIGTERM``."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted by SIGINT"
    name = stop_signal() or (exc.args[0] if exc.args and exc.args[0] else None)
    return "interrupted" + (f" by {name}" if name else "")


async def _prepare(
    video: str | Path,
    config: RunConfig,
    endpoint: EndpointSettings,
    subtitles: str | Path | None,
    subtitle_offset: float,
    chat_model: BaseChatModel | None,
    tracer: RunTracer | None,
) -> _Prepared:
    prompts = get_agent(config.agent).load_prompts(config.prompts)
    source = open_source(video)
    try:
        # The clip's length ends a LongVideoBench cue whose end is not a number.
        subs = load_subtitles(subtitles, subtitle_offset, source.info.duration) if subtitles else None
    except BaseException:
        source.close()
        raise
    records: list[CallRecord] = []

    def on_record(record: CallRecord) -> None:
        records.append(record)
        if tracer is not None:
            tracer.store.model_call(tracer.run_id, record)

    try:
        atlas = VideoAtlas(
            source, k=config.k, cell_px=config.cell_px, cache=RenderCache(render_cache_dir()), subtitles=subs
        )
        model = chat_model if chat_model is not None else OpenAICompatibleChat(settings=endpoint)
        vlm = VLMClient(model, endpoint, on_record=on_record, reask=prompts["reask"])
        await vlm.check_model()
    except BaseException:
        source.close()
        raise
    context = AgentContext(
        atlas=atlas,
        vlm=vlm,
        prompts=prompts,
        config=config,
        subtitles=subs,
        tracer=tracer,
        settings=settings_of(config),
    )
    return _Prepared(context, source, model, chat_model is None, records)


async def _execute(
    prepared: _Prepared,
    checkpointer: BaseCheckpointSaver[Any],
    thread: str,
    inputs: dict[str, Any] | None,
    on_progress: Progress | None,
) -> tuple[dict[str, Any], float]:
    graph = get_agent(prepared.context.config.agent).build(checkpointer)
    run_config: dict[str, Any] = {
        "configurable": {"thread_id": thread},
        "recursion_limit": 500,
    }
    if inputs is None:
        saved = await graph.aget_state(run_config)
        if not saved.values:
            raise NothingToResumeError(
                f"run {thread} has no checkpoint to resume from (it stopped before its first step)"
            )
        if not saved.next:  # stopped after its last step but before its row said so: the answer stands
            return dict(saved.values), 0.0
    began = time.perf_counter()
    final: dict[str, Any] = {}
    # durability="sync": each finished task's writes are saved before the next step starts, so a
    # SIGKILL loses at most the tasks that were in flight.
    async for namespace, mode, chunk in graph.astream(
        inputs,
        run_config,
        context=prepared.context,
        stream_mode=["custom", "values"],
        subgraphs=True,
        durability="sync",
    ):
        if mode == "custom" and on_progress is not None:
            on_progress(chunk)
        elif mode == "values" and not namespace:  # the Master's state, not a worker's
            final = chunk
    if not final:  # nothing streamed (a resume with no step left): read the saved state
        final = dict((await graph.aget_state(run_config)).values)
    return final, time.perf_counter() - began


def _result(
    thread: str, question: str, choices: list[str], final: dict[str, Any], wall: float, records: list[CallRecord]
) -> RunResult:
    return RunResult(
        run_id=thread,
        question=question,
        choices=list(choices),
        answer=final.get("answer", ""),
        answer_index=final.get("answer_index"),
        reasoning=final.get("reasoning", ""),
        evidence=list(final.get("evidence", [])),
        cited=list(final.get("cited", [])),
        cost=final.get("cost") or Cost(),
        rounds=int(final.get("round", 0)),
        stop_reason=final.get("stop_reason", ""),
        search_task=final.get("search_task", ""),
        traversal=final.get("traversal", ""),
        wall_s=wall,
        records=records,
        state=final,
    )


def _finished_values(result: RunResult) -> dict[str, Any]:
    return {
        "status": "finished",
        "finished_at": datetime.now(UTC),
        "answer": result.answer,
        "answer_index": result.answer_index,
        "reasoning": result.reasoning,
        "cost": {**result.cost.summary(), "wall_s": round(result.wall_s, 3)},
        "stop_reason": result.stop_reason,
    }


async def _run_traced(
    owned: _Owned | None,
    thread: str,
    prepared: _Prepared,
    checkpointer: BaseCheckpointSaver[Any],
    inputs: dict[str, Any] | None,
    question: str,
    choices: list[str],
    on_progress: Progress | None,
) -> RunResult:
    # The graph runs as its own task, so a lost lease can stop it without cancelling our caller.
    task = asyncio.ensure_future(_execute(prepared, checkpointer, thread, inputs, on_progress))
    if owned is not None:
        loop = asyncio.get_running_loop()

        def stop_the_run() -> None:  # called from the heartbeat's thread
            with contextlib.suppress(RuntimeError):  # the loop already closed: the run is over anyway
                loop.call_soon_threadsafe(task.cancel)

        owned.heartbeat.watch(stop_the_run)
    try:
        final, wall = await task
    except BaseException as exc:
        if owned is not None:
            current = asyncio.current_task()
            if owned.heartbeat.lost and current is not None and not current.cancelling():
                owned.settled = True  # the lease is another process's now: write nothing
                raise RunOwnedError(f"run {thread} was taken over by another process; this one stopped") from None
            stopped = isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
            error = _stopped_by(exc) if stopped else f"{type(exc).__name__}: {exc}"
            await _settle(owned, status="interrupted" if stopped else "failed", error=error[:2000])
        raise
    finally:
        if owned is not None:
            owned.heartbeat.stop()
        await prepared.aclose()
    result = _result(thread, question, choices, final, wall, prepared.records)
    if owned is not None:
        await _settle(owned, **_finished_values(result))
    return result


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

    The grid picture is checked against the endpoint's image limit first, so a run that could not
    show its first grid is refused before it starts (no model call, no run row). The question and
    its choices are the caller's to check (``ask`` does, with :func:`videoatlas.limits.check_question`;
    a benchmark's items run as they are written).
    """
    limits.check_image_fits(config.k, config.cell_px, endpoint.max_image_pixels)
    thread = run_id or uuid.uuid4().hex[:12]
    url = resolve_db_url(db_url) if persist else None
    timing = LeaseTiming.from_env()
    # Store calls that touch the database run on a thread: on the event loop, waiting for SQLite's
    # write lock would block the checkpointer (same loop) that holds it.
    store = await asyncio.to_thread(TraceStore.shared, url) if url else None
    owned: _Owned | None = None
    try:
        tracer = RunTracer(store, thread) if store is not None else None
        prepared = await _prepare(video, config, endpoint, subtitles, subtitle_offset, chat_model, tracer)
        if store is not None:
            try:  # before the row is written: a run id in use by a live process is left alone
                owned = await _claim(store, thread, timing)
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
                    endpoint=_endpoint_record(prepared.context.vlm.settings),
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
            async with _checkpointer(url) as saver:
                return await _run_traced(owned, thread, prepared, saver, inputs, question, choices, on_progress)
    finally:
        if owned is not None:
            await _settle(owned)  # a run that never started: give the lease back
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
    store = await asyncio.to_thread(TraceStore.shared, url)
    owned: _Owned | None = None
    try:
        row = await asyncio.to_thread(store.run, run_id)
        if row is None:
            raise BadInputError(f"no run {run_id!r} in {redact_url(url)}")
        if row.status != "finished":
            owned = await _claim(store, row.id, timing, force=force)
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
        limits.check_image_fits(config.k, config.cell_px, settings.max_image_pixels)
        tracer = RunTracer(store, row.id)
        prepared = await _prepare(
            row.video_path, config, settings, row.subtitles, row.subtitle_offset, chat_model, tracer
        )
        if prepared.source.identity != row.video_identity:
            await prepared.aclose()
            raise BadInputError(f"{row.video_path} is not the video run {row.id} was started on (its content changed)")
        store.update_run(row.id, status="running", error=None)
        if on_progress is not None:
            on_progress({"event": "run_started", "run_id": row.id, "resumed": True})
        with structlog.contextvars.bound_contextvars(run_id=row.id), run_log(row.id):
            async with _checkpointer(url) as saver:
                return await _run_traced(owned, row.id, prepared, saver, None, row.question, row.choices, on_progress)
    finally:
        if owned is not None:
            await _settle(owned)  # refused or failed before running: give the lease back
        await asyncio.to_thread(store.release)


async def load_finished(run_id: str, db_url: str | None = None) -> RunResult | None:
    """The result of a finished run, read back from its final checkpoint (None: no run that finished).

    A run counts as finished when its last checkpoint has no step left, even if the process died
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
        if not snapshot.values or snapshot.next:
            return None
        wall = float((row.cost or {}).get("wall_s", 0.0))
        result = _result(row.id, row.question, row.choices, dict(snapshot.values), wall, [])
        if row.status != "finished":
            store.update_run(row.id, **_finished_values(result))
        return result
    finally:
        await asyncio.to_thread(store.release)


def _endpoint_record(settings: EndpointSettings) -> dict[str, Any]:
    """What is stored about the endpoint: never the API key; for the in-process stand-in, that it was one."""
    record: dict[str, Any] = {
        "base_url": settings.base_url,
        "model": settings.model,
        "timeout_s": settings.timeout_s,
        "strict_schema": settings.strict_schema,
    }
    if settings.standin:
        record.update(standin=True, max_image_pixels=settings.max_image_pixels)
    return record


@contextlib.asynccontextmanager
async def _checkpointer(url: str | None) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    if url is None:
        yield InMemorySaver()
        return
    # One saver per database serves every run in the process, whatever the agent: its serializer must
    # know every agent's state records, so every agent is loaded before it is made.
    all_agents()
    async with open_checkpointer(url) as saver:
        yield saver
