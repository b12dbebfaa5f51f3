"""The parts of a run: its context, its lease, the graph streamed to its end, and settling its row.

:mod:`videoatlas.runs` puts them together in one frame, :func:`~videoatlas.runs.run_question`, for a new run
and for one gone on with from its last checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
from langchain_core.language_models.chat_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import StateSnapshot

from videoatlas.agents.base import Agent
from videoatlas.agents.registry import all_agents, get_agent, settings_of
from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.cache import RenderCache
from videoatlas.environment.concat import audio_pieces, open_source
from videoatlas.environment.frames import FrameSource
from videoatlas.environment.subtitles import Subtitles, load_subtitles
from videoatlas.errors import OutageError, RunOwnedError
from videoatlas.llm.chat_model import OpenAICompatibleChat
from videoatlas.llm.client import VLMClient
from videoatlas.llm.langsmith_redact import langsmith_scope
from videoatlas.llm.records import CallRecord
from videoatlas.llm.settings import EndpointSettings
from videoatlas.paths import render_cache_dir
from videoatlas.persistence.checkpoint import open_checkpointer
from videoatlas.prompts import PromptSet
from videoatlas.runs.frame import Owned, Progress, settle
from videoatlas.runs.result import RunResult, finished_values, result_from_state
from videoatlas.runtime.context import AgentContext, RunConfig
from videoatlas.runtime.speech import open_speech
from videoatlas.runtime.stopping import stop_signal
from videoatlas.runtime.tracing import RunTracer

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class Prepared:
    """A run's agent and context, and what it holds open: the video source, and the chat model when the run made it."""

    agent: Agent
    context: AgentContext
    source: FrameSource
    model: BaseChatModel
    owns_model: bool
    records: list[CallRecord]

    async def aclose(self) -> None:
        """Close the video source, the speech client, and the chat model if this run opened it."""
        self.source.close()
        if self.context.speech is not None:
            await self.context.speech.aclose()
        if self.owns_model and isinstance(self.model, OpenAICompatibleChat):
            await self.model.aclose()


def _stopped_by(exc: BaseException) -> str:
    """The error recorded for a run that was stopped: ``interrupted by SIGTERM``."""
    # the signal noted, else the one the exception names (the command line's Interrupted does)
    name = stop_signal() or (exc.args[0] if exc.args and exc.args[0] else None)
    if name is None and isinstance(exc, KeyboardInterrupt):
        name = "SIGINT"  # a bare Ctrl-C
    return "interrupted" + (f" by {name}" if name else "")


def _open_video(
    agent: Agent,
    video: str | Path,
    config: RunConfig,
    subtitles: str | Path | None,
    subtitle_offset: float,
    opened: FrameSource | None = None,
) -> tuple[PromptSet, FrameSource, VideoAtlas, Subtitles | None]:
    """The run's prompt set, its video opened (unless ``opened``), the atlas over it, and its subtitles (if any)."""
    source = opened if opened is not None else open_source(video)
    try:
        prompts = agent.load_prompts(config.prompts)
        # The clip's length ends a LongVideoBench cue whose end is not a number.
        subs = load_subtitles(subtitles, subtitle_offset, source.info.duration) if subtitles else None
        atlas = VideoAtlas(
            source,
            k=config.k,
            cell_px=config.cell_px,
            cache=RenderCache(render_cache_dir()),
            subtitles=subs,
            grid_checked=True,  # by the RunConfig, as it was made
        )
    except BaseException:
        source.close()
        raise
    return prompts, source, atlas, subs


async def prepare(
    video: str | Path,
    config: RunConfig,
    endpoint: EndpointSettings,
    subtitles: str | Path | None,
    subtitle_offset: float,
    chat_model: BaseChatModel | None,
    tracer: RunTracer | None,
    opened: FrameSource | None = None,
    on_progress: Progress | None = None,
) -> Prepared:
    """The run's context: prompts, video, subtitles, the model client (its model checked) and the tracer.

    Reading the prompts, probing the video and parsing subtitles touch files: they run on a thread,
    so that the event loop (other runs of an eval, a server's other requests) goes on meanwhile.
    ``opened``: the video opened already; it is the run's to close from here on. ``on_progress`` also
    sees each model call start and end (:func:`call_event`), so a long wait on the model can be shown.
    """
    agent = get_agent(config.agent)
    prompts, source, atlas, subs = await asyncio.to_thread(
        _open_video, agent, video, config, subtitles, subtitle_offset, opened
    )
    records: list[CallRecord] = []

    def on_record(record: CallRecord) -> None:
        records.append(record)
        if tracer is not None:
            tracer.model_call(record)
        if on_progress is not None:
            on_progress(call_event("call_finished", record))

    def on_start(record: CallRecord) -> None:
        if on_progress is not None:
            on_progress(call_event("call_started", record))

    try:
        model = chat_model if chat_model is not None else OpenAICompatibleChat(settings=endpoint)
        vlm = VLMClient(model, endpoint, on_record=on_record, reask=prompts["reask"], on_start=on_start)
        await vlm.check_model()
    except BaseException:
        source.close()
        raise
    speech, why = open_speech(
        config.speech,
        source.info,
        source.identity,
        vlm.settings,
        speech_url=config.speech_url,
        speech_model=config.speech_model,
        has_subtitles=subs is not None,
        engine=tracer.store.engine if tracer is not None else None,
        pieces=audio_pieces(source),
    )
    if why and config.speech != "off":
        log.info("speech_off", reason=why)
    context = AgentContext(
        atlas=atlas,
        vlm=vlm,
        prompts=prompts,
        config=config,
        subtitles=subs,
        speech=speech,
        tracer=tracer,
        settings=settings_of(config),
    )
    return Prepared(agent, context, source, model, chat_model is None, records)


def call_event(kind: str, record: CallRecord) -> dict[str, Any]:
    """A progress event of one model call: ``call_started`` (which call) or ``call_finished`` (how it went).

    The call is named by a number unique while it is out (``call``), its node, reply schema and role, and the
    place the agent labelled it with (``worker``, ``round``, ``step``); a finished one adds its outcome,
    tokens and latency.
    """
    event: dict[str, Any] = {
        "event": kind,
        "call": id(record),
        "node": record.node,
        "schema": record.schema,
        "role": record.role,
        **{key: record.meta[key] for key in ("worker", "round", "step") if key in record.meta},
    }
    if kind == "call_finished":
        event.update(
            outcome=record.outcome,
            tokens=record.prompt_tokens + record.completion_tokens,
            latency_s=round(record.latency_s, 3),
        )
    return event


def has_step_left(saved: StateSnapshot) -> bool:
    """Whether a run's last checkpoint leaves any of its graph to run.

    Not ``saved.next``: that omits the tasks that already saved their writes. A run stopped after
    every task of a step had finished, but before the checkpoint that applies their writes was saved
    (a cancel that lands while ``durability="sync"`` waits for that save), has no ``next`` and still
    a step to finish: resuming applies those writes and goes on. Only the graph's end has no task.
    """
    return bool(saved.tasks)


async def execute(
    prepared: Prepared,
    checkpointer: BaseCheckpointSaver[Any],
    thread: str,
    inputs: dict[str, Any],
    resume: bool,
    on_progress: Progress | None,
) -> tuple[dict[str, Any], float]:
    """Stream the graph to its end: its final state, and wall time.

    ``resume``: from the run's last checkpoint (from ``inputs`` if it has none yet: it stopped before its
    first step); a run whose checkpoint has no step left is read back as it stands.
    """
    graph = prepared.agent.build(checkpointer)
    run_config: dict[str, Any] = {
        "configurable": {"thread_id": thread},
        "recursion_limit": 500,
    }
    start: dict[str, Any] | None = inputs
    if resume:
        saved = await graph.aget_state(run_config)
        if saved.values:
            if not has_step_left(saved):  # stopped after its last step but before its row said so: it stands
                return dict(saved.values), 0.0
            start = None
        else:
            log.info("no checkpoint yet; starting the question again", run_id=thread)
    began = time.perf_counter()
    final: dict[str, Any] = {}
    # durability="sync": each finished task's writes are saved before the next step starts, so a
    # SIGKILL loses at most the tasks that were in flight. LangSmith (if on) gets no image unless asked.
    with langsmith_scope():
        async for namespace, mode, chunk in graph.astream(
            start,
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


async def run_traced(
    owned: Owned | None,
    thread: str,
    prepared: Prepared,
    checkpointer: BaseCheckpointSaver[Any],
    inputs: dict[str, Any],
    resume: bool,
    question: str,
    choices: list[str],
    on_progress: Progress | None,
) -> RunResult:
    """Run the graph under the run's lease: a lost lease stops it, and its row is settled however it ends."""
    # The graph runs as its own task, so a lost lease can stop it without cancelling our caller.
    task = asyncio.ensure_future(execute(prepared, checkpointer, thread, inputs, resume, on_progress))
    if owned is not None:
        owned.stop_on_loss(task)
    try:
        final, wall = await task
    except BaseException as exc:
        if owned is not None:
            current = asyncio.current_task()
            if owned.heartbeat.lost and current is not None and not current.cancelling():
                owned.settled = True  # the lease is another process's now: write nothing
                raise RunOwnedError(f"run {thread} was taken over by another process; this one stopped") from None
            # An outage (the endpoint or the database gone past the patience) stops the run like a
            # signal does: interrupted, resumable; never failed.
            stopped = isinstance(exc, KeyboardInterrupt | asyncio.CancelledError | OutageError)
            if isinstance(exc, OutageError):
                error = f"interrupted: {exc}"
            else:
                error = _stopped_by(exc) if stopped else f"{type(exc).__name__}: {exc}"
            await settle(owned, status="interrupted" if stopped else "failed", error=error[:2000])
        raise
    finally:
        if owned is not None:
            owned.heartbeat.stop()
        await prepared.aclose()
    extras = prepared.agent.views.result_extras(final)
    result = result_from_state(thread, question, choices, final, wall, prepared.records, extras)
    if owned is not None:
        await settle(owned, **finished_values(result))
    return result


@contextlib.asynccontextmanager
async def saver_for(url: str | None, patience_s: float | None = None) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """The checkpointer for ``url`` (None: in memory, for a run that is not kept).

    A lost database is waited for ``patience_s`` (see :mod:`videoatlas.persistence.patience`).
    """
    if url is None:
        yield InMemorySaver()
        return
    # One saver per database serves every run in the process, whatever the agent: its serializer must
    # know every agent's state records, so every agent is loaded before it is made.
    all_agents()
    async with open_checkpointer(url, patience_s) as saver:
        yield saver
