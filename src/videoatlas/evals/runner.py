"""The evaluation runner: questions run concurrently, each as its own checkpointed run, results appended.

Re-running the same command resumes: a question whose result is already in the output folder is
skipped, one whose run was interrupted is resumed from its checkpoint, and one finished by any
earlier eval on the same database is read back from it. A question whose run failed is tried
again; until it succeeds it counts as answered wrong. Every result is keyed by a hash of the
question, the agent and the hash of its code, the hash of the prompt templates it uses, the model
and the agent's settings (:func:`result_key`), so editing a prompt or a node re-runs exactly the
questions it can change.

Output folder layout (``--shard i/n`` gives each shard its own two files, so a Slurm array can
share one folder and one PostgreSQL database)::

    eval.json        what was run: dataset, agent and its code version, config, prompt set and hash,
                     model, item keys
    results.jsonl    one line per attempted question (status "ok" or "error"), appended as each one
                     finishes; a retried question's later line replaces its earlier one
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from videoatlas import __version__, limits
from videoatlas.agents.registry import get_agent
from videoatlas.agents.registry import knobs as agent_knobs
from videoatlas.environment.concat import media_duration
from videoatlas.errors import BadInputError, NothingToResumeError, VideoAtlasError
from videoatlas.evals.datasets import Loaded, load_dataset
from videoatlas.evals.items import EvalItem, interleave
from videoatlas.llm.chat_model import OpenAICompatibleChat
from videoatlas.llm.client import VLMClient
from videoatlas.llm.settings import EndpointSettings
from videoatlas.persistence.db import resolve_db_url
from videoatlas.persistence.store import TraceStore
from videoatlas.runs import RunResult, load_finished, resume_run, run_question
from videoatlas.runtime.context import RunConfig
from videoatlas.synth import Style

log = structlog.get_logger(__name__)

RESULT_SCHEMA = 2
"""2: rows carry ``agent_code``, and a failed run's row carries the item's truth and categories."""


@dataclass(frozen=True, slots=True)
class Shard:
    """Part ``index`` (0-based) of ``count`` equal parts."""

    index: int = 0
    count: int = 1

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"2/8"`` -> the third of eight shards (shards are numbered from 0)."""
        left, sep, right = text.partition("/")
        if not sep or not left.strip().isdigit() or not right.strip().isdigit():
            raise BadInputError(f"--shard must look like i/n (e.g. 0/4), got {text!r}")
        index, count = int(left), int(right)
        if count < 1 or not 0 <= index < count:
            raise BadInputError(f"--shard {text}: need 0 <= i < n")
        return cls(index, count)

    @property
    def suffix(self) -> str:
        """File-name suffix of this shard's files ('' when unsharded)."""
        return "" if self.count == 1 else f"-shard{self.index}of{self.count}"


@dataclass(slots=True)
class EvalSpec:
    """One evaluation: what to run, how, and where its results go."""

    dataset: str
    root: str
    out: str
    config: RunConfig
    limit: int | None = None
    shard: Shard = field(default_factory=Shard)
    concurrency: int = 4
    durations: Sequence[float] | None = None
    seed: int = 1
    styles: Sequence[Style] | None = None
    """Synthetic suite only: which video styles (default: all)."""
    db_url: str | None = None
    subtitles: bool = True
    """False: run without the benchmark's subtitles (Video-MME reports both settings)."""
    subset: list[str] | None = None
    """Only these published splits of the benchmark (``--subset``; names checked by ``parse_subset``)."""


@dataclass(slots=True)
class EvalProgress:
    """Where an evaluation stands, passed to the progress callback after every question."""

    total: int
    done: int = 0
    cached: int = 0
    correct: int = 0
    scored: int = 0
    """Questions with a known answer, whether their run finished or failed (a failed one is wrong)."""
    parse_failures: int = 0
    errors: int = 0
    """Questions whose run failed (counted in ``scored``, never in ``correct``)."""
    tokens: int = 0
    started: float = field(default_factory=time.monotonic)
    ran: int = 0
    """Questions answered by this invocation (not taken from a cache): the ETA's basis."""

    @property
    def accuracy(self) -> float | None:
        """Correct over scored so far: a run that failed counts as a wrong answer, never as no question."""
        return self.correct / self.scored if self.scored else None

    @property
    def error_rate(self) -> float | None:
        """Share of the questions done so far whose run failed."""
        return self.errors / self.done if self.done else None

    @property
    def eta_s(self) -> float | None:
        """Seconds left at this invocation's pace so far."""
        if not self.ran:
            return None
        return (time.monotonic() - self.started) / self.ran * (self.total - self.done)


@dataclass(slots=True)
class EvalOutcome:
    """What an evaluation left in its folder."""

    out: Path
    results_file: Path
    progress: EvalProgress
    model: str


def result_key(
    item: EvalItem, agent: str, prompt_sha: str, model: str, knobs: dict[str, Any], *, agent_code: str
) -> str:
    """The cache key of one question's result: change any input and the question runs again.

    ``agent_code`` is :meth:`~videoatlas.agents.registry.Agent.code_version` and ``model`` the id the
    endpoint reports, so changed agent code or a changed model (a new stand-in version) re-runs.
    """
    material = {
        "item": {k: v for k, v in item.as_dict().items() if k not in ("categories", "groups")},
        "agent": agent,
        "agent_code": agent_code,
        "prompt_sha": prompt_sha,
        "model": model,
        "knobs": knobs,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:32]


def load_selected(spec: EvalSpec) -> Loaded:
    """The dataset's items (its ``--subset``) spread over videos, cut to ``--limit``, then this shard's share.

    The skipped records come along, to be counted in ``eval.json`` and the report.
    """
    loaded = load_dataset(spec.dataset, spec.root, spec.durations, spec.seed, spec.styles, spec.subset)
    items = interleave(loaded.items)
    if spec.limit is not None:
        if spec.limit < 1:
            raise BadInputError("--limit must be at least 1")
        items = items[: spec.limit]
    mine = items[spec.shard.index :: spec.shard.count]
    if not spec.subtitles:
        mine = [replace(i, subtitles=None, subtitle_offset=0.0) for i in mine]
    return Loaded(mine, loaded.skipped)


def select_items(spec: EvalSpec) -> list[EvalItem]:
    """The items :func:`load_selected` picks, refused when any lacks an answer or a video file."""
    return runnable(load_selected(spec).items)


def runnable(mine: list[EvalItem]) -> list[EvalItem]:
    """``mine``, or a one-line refusal when any question lacks an answer or its video file."""
    unanswerable = [i.id for i in mine if i.answer_index is None and i.choices]
    if unanswerable:
        raise BadInputError(f"{len(unanswerable)} question(s) have no ground-truth answer (first: {unanswerable[0]})")
    missing = sorted({i.video for i in mine if not Path(i.video).is_file()})
    if missing:
        raise BadInputError(f"{len(missing)} video file(s) are missing (first: {missing[0]})")
    return mine


def skipped_summary(loaded: Loaded) -> dict[str, Any]:
    """What ``eval.json`` keeps of the skipped records: each malformed one, and the others by reason."""
    excluded: dict[str, int] = {}
    for s in loaded.skipped:
        if not s.malformed:
            excluded[s.reason] = excluded.get(s.reason, 0) + 1
    return {"malformed": [s.as_dict() for s in loaded.skipped if s.malformed], "excluded": excluded}


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The result lines of one file; a torn last line (a kill mid-write) is ignored with a warning."""
    if not path.is_file():
        return []
    rows = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if n == len(lines):
                log.warning("ignoring an incomplete last result line", file=str(path), line=n)
                continue
            raise BadInputError(f"{path}:{n}: not a result line (invalid JSON)") from None
    return rows


async def resolve_model(endpoint: EndpointSettings) -> str:
    """The model the endpoint will answer with (checked once, so every result can be keyed by it)."""
    model = OpenAICompatibleChat(settings=endpoint)
    try:
        return await VLMClient(model, endpoint).check_model()
    finally:
        await model.aclose()


def _item_fields(item: EvalItem, key: str, stamp: dict[str, str], status: str) -> dict[str, Any]:
    """What every row says about its question, so reports place a failed run where its answer would be."""
    return {
        "schema": RESULT_SCHEMA,
        "status": status,
        "key": key,
        **stamp,
        "item": item.id,
        "dataset": item.dataset,
        "video_id": item.video_id,
        "categories": item.categories,
        "groups": item.groups,
        "truth_index": item.answer_index,
        "truth_ranges": item.evidence,
    }


def _row(
    item: EvalItem, key: str, stamp: dict[str, str], result: RunResult, duration: float, source: str
) -> dict[str, Any]:
    cited = [e for e in result.evidence if e.id in result.cited]
    cost = result.cost
    scored = bool(item.choices) and item.answer_index is not None
    return {
        **_item_fields(item, key, stamp, "ok"),
        "duration": duration,
        "answer": result.answer,
        "answer_index": result.answer_index,
        "correct": scored and result.answer_index == item.answer_index,
        "parse_failed": bool(item.choices) and result.answer_index is None,
        "grounded": result.grounded,
        "fallbacks": cost.fallbacks,
        "frames_sent": cost.frames_sent,
        "frames_viewed": cost.frames_viewed,
        "calls": cost.calls,
        "failed_calls": cost.failed_calls,
        "tokens": cost.tokens,
        "prompt_tokens": cost.prompt_tokens,
        "cached_tokens": cost.cached_tokens,
        "master_tokens": cost.master_tokens,
        "worker_tokens": cost.worker_tokens,
        "wall_s": round(result.wall_s, 3),
        "rounds": result.rounds,
        "evidence": len(result.evidence),
        "evidence_times": [round(e.time, 3) for e in result.evidence],
        "cited_times": [round(e.time, 3) for e in cited],
        "cited_ranges": [[round(e.start, 3), round(e.end, 3)] for e in cited],
        "stop_reason": result.stop_reason,
        "run_id": result.run_id,
        "source": source,
        "finished_at": datetime.now(UTC).isoformat(),
    }


class _Appender:
    """Appends result lines to one file, each flushed and synced before the next question counts."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh = path.open("a", encoding="utf-8")

    def write(self, row: dict[str, Any]) -> None:
        self.fh.write(json.dumps(row) + "\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        self.fh.close()


def _write_meta(path: Path, meta: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)


def _check_folder(out: Path, spec: EvalSpec) -> None:
    for meta_file in out.glob("eval*.json"):
        try:
            other = json.loads(meta_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            raise BadInputError(f"{meta_file} is not valid JSON; move it away or give a new --out") from None
        if other.get("dataset") != spec.dataset:
            raise BadInputError(
                f"{out} already holds an eval of {other.get('dataset')!r}; give a new --out for {spec.dataset!r}"
            )


async def run_eval(
    spec: EvalSpec,
    endpoint: EndpointSettings,
    on_progress: Callable[[EvalProgress], None] | None = None,
) -> EvalOutcome:
    """Run (or resume) an evaluation; returns where its results are and how it went."""
    if spec.concurrency < 1:
        raise BadInputError("--concurrency must be at least 1")
    limits.check_image_fits(spec.config.k, spec.config.cell_px, endpoint.max_image_pixels)
    agent = get_agent(spec.config.agent)
    prompts = agent.load_prompts(spec.config.prompts)
    prompt_sha = prompts.sha256
    agent_code = agent.code_version()
    selected = load_selected(spec)
    items = runnable(selected.items)
    skipped = skipped_summary(selected)
    model = await resolve_model(endpoint)
    endpoint = endpoint.with_model(model)
    knobs = agent_knobs(spec.config)
    keys = {item.id: result_key(item, agent.name, prompt_sha, model, knobs, agent_code=agent_code) for item in items}
    out = Path(spec.out).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    _check_folder(out, spec)
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
        "videoatlas": __version__,
        "updated_at": datetime.now(UTC).isoformat(),
    }
    _write_meta(out / f"eval{spec.shard.suffix}.json", meta)
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
        _count(progress, row)
    if on_progress is not None:
        on_progress(progress)
    url = resolve_db_url(spec.db_url)
    appender = _Appender(results_file)
    queue: asyncio.Queue[EvalItem] = asyncio.Queue()
    for item in pending:
        queue.put_nowait(item)

    async def worker() -> None:
        while True:
            try:
                item = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            row = await _answer(item, keys[item.id], stamp, spec.config, endpoint, url)
            appender.write(row)
            if row.get("source") != "db-cache":
                progress.ran += 1
            else:
                progress.cached += 1
            _count(progress, row)
            if on_progress is not None:
                on_progress(progress)

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(spec.concurrency, max(1, len(pending)))):
                group.create_task(worker())
    finally:
        appender.close()
    return EvalOutcome(out, results_file, progress, model)


def _count(progress: EvalProgress, row: dict[str, Any]) -> None:
    progress.done += 1
    if row.get("truth_index") is not None:
        progress.scored += 1
    if row.get("status") != "ok":
        progress.errors += 1  # scored above and never correct: a failed run is a wrong answer
        return
    progress.tokens += int(row.get("tokens", 0))
    progress.correct += bool(row.get("correct"))
    progress.parse_failures += bool(row.get("parse_failed"))


async def _answer(
    item: EvalItem, key: str, stamp: dict[str, str], config: RunConfig, endpoint: EndpointSettings, url: str
) -> dict[str, Any]:
    """One question: from the database's finished runs, by resuming its run, or by running it."""
    run_id = f"ev-{key[:24]}"
    with structlog.contextvars.bound_contextvars(item=item.id):
        try:
            duration = item.duration if item.duration is not None else media_duration(item.video)
            store = await asyncio.to_thread(TraceStore.shared, url)
            try:
                existing = await asyncio.to_thread(store.run, run_id)
            finally:
                await asyncio.to_thread(store.release)
            if existing is not None and existing.id == run_id:
                # A run with this key exists: read back its result if it finished, else resume it.
                cached = await load_finished(run_id, url)
                if cached is not None:
                    return _row(item, key, stamp, cached, duration, "db-cache")
                try:
                    result = await resume_run(run_id, url, endpoint=endpoint)
                    log.info("resumed interrupted question", run_id=run_id)
                    return _row(item, key, stamp, result, duration, "resumed")
                except NothingToResumeError:
                    log.info("interrupted question had no checkpoint yet; starting it again", run_id=run_id)
            result = await run_question(
                item.video,
                item.question,
                item.choices,
                config,
                endpoint,
                subtitles=item.subtitles,
                subtitle_offset=item.subtitle_offset,
                db_url=url,
                run_id=run_id,
            )
            return _row(item, key, stamp, result, duration, "run")
        except VideoAtlasError as exc:
            # A question whose run failed is recorded as an error and scored as a wrong answer:
            # dropping it would raise accuracy exactly where the model struggles. It is not cached,
            # so the next invocation tries it again.
            log.warning("question failed", error=str(exc))
            return {
                **_item_fields(item, key, stamp, "error"),
                "duration": item.duration,
                "answer_index": None,
                "correct": False,
                "parse_failed": False,
                "error": f"{type(exc).__name__}: {exc}"[:1000],
                "run_id": run_id,
                "finished_at": datetime.now(UTC).isoformat(),
            }
