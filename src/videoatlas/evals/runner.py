"""The evaluation runner: questions run concurrently, each as its own checkpointed run, results appended.

Re-running the same command resumes: a question whose result is already in the output folder is
skipped, one whose run was interrupted is resumed from its checkpoint, and one finished by any
earlier eval on the same database is read back from it. A question whose run failed is tried
again; until it succeeds it counts as answered wrong.

An outage is not a failure of the question. While the VLM endpoint is down no new question starts
and the runs in flight wait (:mod:`videoatlas.llm.outage`); the databases are waited for the same
way (:mod:`videoatlas.persistence.patience`). Past the patience the eval stops: the questions
whose runs were stopped get an ``interrupted`` line (never scored), and
:class:`~videoatlas.errors.OutageError` says to run the same command again, which resumes them.

Every result is keyed by a hash of the question, the agent and the hash of its code, the hash of
the prompt templates it uses, the model and the agent's settings (:func:`result_key`), so editing a
prompt or a node re-runs exactly the questions it can change.

Output folder layout (``--shard i/n`` gives each shard its own two files, so a Slurm array can
share one folder and one PostgreSQL database)::

    eval.json        what was run: dataset, agent and its code version, config, prompt set and hash,
                     model, item keys
    results.jsonl    one line per attempted question (status "ok", "error" or "interrupted"), appended
                     as each one ends; a retried question's later line replaces its earlier one

The run's parts live by concern: what it selects (:mod:`.spec`), its output folder and rows
(:mod:`.results`), its progress (:mod:`.progress`); this module runs the questions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import structlog

from videoatlas.agents.registry import get_agent
from videoatlas.environment.concat import media_duration
from videoatlas.errors import BadInputError, DatabaseDownError, OutageError, VideoAtlasError
from videoatlas.evals.answering import Keys, answer_item, run_id_for
from videoatlas.evals.items import EvalItem
from videoatlas.evals.progress import EvalProgress
from videoatlas.evals.results import (
    Appender,
    check_folder,
    error_row,
    interrupted_row,
    read_rows,
    result_key,
    result_row,
    write_meta,
)
from videoatlas.evals.spec import EvalSpec, Shard, load_selected, runnable, select_items, skipped_summary
from videoatlas.llm.chat_model import OpenAICompatibleChat
from videoatlas.llm.client import VLMClient
from videoatlas.llm.outage import EndpointWatch, watch_for
from videoatlas.llm.settings import EndpointSettings
from videoatlas.persistence.db import resolve_db_url
from videoatlas.persistence.engine import wait_for_database
from videoatlas.persistence.patience import is_connection_loss
from videoatlas.runtime.context import RunConfig

__all__ = [
    "EvalOutcome",
    "EvalProgress",
    "EvalSpec",
    "Shard",
    "load_selected",
    "read_rows",
    "resolve_model",
    "result_key",
    "run_eval",
    "runnable",
    "select_items",
    "skipped_summary",
]

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class EvalOutcome:
    """What an evaluation left in its folder."""

    out: Path
    results_file: Path
    progress: EvalProgress
    model: str


async def resolve_model(endpoint: EndpointSettings) -> str:
    """The model the endpoint will answer with (checked once, so every result can be keyed by it)."""
    model = OpenAICompatibleChat(settings=endpoint)
    try:
        return await VLMClient(model, endpoint).check_model()
    finally:
        await model.aclose()


async def run_eval(
    spec: EvalSpec,
    endpoint: EndpointSettings,
    on_progress: Callable[[EvalProgress], None] | None = None,
) -> EvalOutcome:
    """Run (or resume) an evaluation; returns where its results are and how it went.

    Each question goes through the front door (:func:`videoatlas.request.answer`), which checks the
    agent's pictures against ``endpoint``'s image limit; ``eval run`` checks them once before it starts.
    """
    if spec.concurrency < 1:
        raise BadInputError("--concurrency must be at least 1")
    agent = get_agent(spec.config.agent)
    prompts = agent.load_prompts(spec.config.prompts)
    prompt_sha = prompts.sha256
    agent_code = agent.code_version()
    selected = load_selected(spec)
    items = runnable(selected.items)
    skipped = skipped_summary(selected)
    model = await resolve_model(endpoint)
    endpoint = endpoint.with_model(model)
    keying = Keys.of(spec.config, model)
    keys = {item.id: keying.key(item) for item in items}
    url = resolve_db_url(spec.db_url)
    # An array task may start before its database can be reached from its node: it waits within the
    # patience, then stops with exit 75 (run it again) before anything is written.
    await wait_for_database(url, endpoint.patience_s)
    out = Path(spec.out).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    check_folder(out, spec)
    results_file = out / f"results{spec.shard.suffix}.jsonl"
    meta = {
        "dataset": spec.dataset,
        "root": str(Path(spec.root).expanduser().resolve()),
        "agent": agent.name,
        "agent_code": agent_code,
        "config": spec.config.model_dump(),
        "prompt_set": prompts.name,
        "prompt_source": prompts.source,
        "prompt_sha": prompt_sha,
        "templates": {name: template.sha256 for name, template in prompts.templates.items()},
        "model": model,
        "base_url": endpoint.base_url,
        "limit": spec.limit,
        "subtitles": spec.subtitles,
        "subset": spec.subset,
        "skipped": skipped,
        "shard": [spec.shard.index, spec.shard.count],
        "results": results_file.name,
        "keys": keys,
        "videoatlas": version("videoatlas"),
        "updated_at": datetime.now(UTC).isoformat(),
    }
    write_meta(out / f"eval{spec.shard.suffix}.json", meta)
    # Every result line says which agent, agent code, prompt templates and model produced it.
    stamp = {
        "agent": agent.name,
        "agent_code": agent_code,
        "prompt_set": prompts.name,
        "prompt_sha": prompt_sha,
        "model": model,
    }
    # Only finished runs are reused: a failure may be transient, so its question runs again (and
    # until it succeeds, reports count it as answered wrong).
    done = {row.get("key"): row for row in read_rows(results_file) if row.get("status") == "ok"}
    progress = EvalProgress(total=len(items))
    pending = []
    for item in items:
        row = done.get(keys[item.id])
        if row is None:
            pending.append(item)
            continue
        progress.cached += 1
        progress.add(row)
    if on_progress is not None:
        on_progress(progress)
    appender = Appender(results_file)
    queue: asyncio.Queue[EvalItem] = asyncio.Queue()
    for item in pending:
        queue.put_nowait(item)
    watch = watch_for(endpoint)
    outages: list[OutageError] = []

    async def worker() -> None:
        while not outages:
            try:
                await watch.wait_until_up()  # no new question while the endpoint is down
            except OutageError as exc:
                outages.append(exc)
                return
            try:
                item = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            row = await _answer(item, keys[item.id], stamp, spec.config, endpoint, url)
            appender.write(row)
            if row["status"] == "interrupted":
                outages.append(row.pop("_outage"))
                progress.interrupted += 1
            else:
                if row.get("source") != "db-cache":
                    progress.ran += 1
                else:
                    progress.cached += 1
                progress.add(row)
            if on_progress is not None:
                on_progress(progress)

    ticker = asyncio.ensure_future(_show_outages(watch, progress, on_progress))
    try:
        await _run_workers(worker, min(spec.concurrency, max(1, len(pending))))
    finally:
        ticker.cancel()
        appender.close()
    if outages:
        raise _stopped(outages[0], progress)
    return EvalOutcome(out, results_file, progress, model)


async def _run_workers(worker: Callable[[], Any], count: int) -> None:
    """Run ``count`` workers to their end; a worker's unexpected error is raised as itself, never as a group."""
    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(count):
                group.create_task(worker())
    except BaseExceptionGroup as group_error:
        raise group_error.exceptions[0] from None


async def _show_outages(
    watch: EndpointWatch, progress: EvalProgress, on_progress: Callable[[EvalProgress], None] | None
) -> None:
    """While the endpoint is down, tell the progress callback how long for, every second."""
    while True:
        await asyncio.sleep(1.0)
        down = watch.down_for()
        if down == progress.endpoint_down_s:
            continue
        progress.endpoint_down_s = down
        if on_progress is not None:
            on_progress(progress)


def _stopped(first: OutageError, progress: EvalProgress) -> OutageError:
    """The error an eval stopped by an outage ends with: what went away, what is left, how to go on."""
    left = progress.total - progress.done
    return type(first)(
        f"{first}; {progress.done} of {progress.total} question(s) have a result, {left} left "
        f"({progress.interrupted} interrupted mid-run, none scored): run the same command again to resume them"
    )


async def _answer(
    item: EvalItem, key: str, stamp: dict[str, str], config: RunConfig, endpoint: EndpointSettings, url: str
) -> dict[str, Any]:
    """One question: from the database's finished runs, by resuming its run, or by running it."""
    run_id = run_id_for(key)
    with structlog.contextvars.bound_contextvars(item=item.id):
        try:
            duration = item.duration if item.duration is not None else media_duration(item.video)
            answered = await answer_item(item, run_id, config, endpoint, url)
            return result_row(item, key, stamp, answered.result, duration, answered.source)
        except Exception as exc:
            if isinstance(exc, OutageError):
                outage: OutageError = exc
            elif is_connection_loss(exc):  # a database call outside the patient ones: the same outage
                outage = DatabaseDownError(f"the database connection was lost: {str(exc).strip().splitlines()[0]}")
            elif isinstance(exc, VideoAtlasError):
                # A question whose run failed is recorded as an error and scored as a wrong answer:
                # dropping it would raise accuracy exactly where the model struggles. It is not cached,
                # so the next invocation tries it again.
                log.warning("question failed", error=str(exc))
                return error_row(item, key, stamp, run_id, exc)
            else:
                raise
            # Not the question's fault: its run is left interrupted, and the next invocation resumes it.
            log.warning("question interrupted by an outage", error=str(outage))
            return {**interrupted_row(item, key, stamp, run_id, outage), "_outage": outage}
