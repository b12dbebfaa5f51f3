"""What each MCP tool does, as plain async functions over a :class:`Service` (the server wires them in).

Every path a client names, and every video a stored run points at, is checked against the server's
roots before anything opens it. Errors are :class:`~videoatlas.errors.VideoAtlasError` subclasses
with a one-line message, which the server hands back as a tool error.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from videoatlas.agents.registry import agent_names
from videoatlas.api import aask
from videoatlas.environment.concat import open_source
from videoatlas.environment.render import render_zoom
from videoatlas.environment.timefmt import format_ts
from videoatlas.environment.video import probe
from videoatlas.errors import BadInputError
from videoatlas.inspect import load_trace
from videoatlas.llm.settings import EndpointSettings
from videoatlas.mcp.roots import Roots
from videoatlas.persistence.lease import LeaseTiming
from videoatlas.persistence.queries import RunSearch, recent_runs
from videoatlas.persistence.statuses import RUN_STATUSES
from videoatlas.persistence.store import TraceStore
from videoatlas.request import EndpointChoice, answer, resume_request

Events = Callable[[dict[str, Any]], None]

MAX_FRAMES = 16
"""Evidence frames one call returns at most (each is a PNG in the reply)."""


@dataclass(frozen=True, slots=True)
class Service:
    """What the tools share: the VLM endpoint, the folders they may open, the database runs are kept in."""

    endpoint: EndpointSettings
    roots: Roots
    db: str
    """The run store's URL (runs, checkpoints and traces, as for ``videoatlas ask``)."""


async def ask(
    service: Service,
    path: str,
    question: str,
    choices: Sequence[str],
    agent: str,
    token_budget: int | None,
    call_budget: int | None,
    options: dict[str, Any],
    on_event: Events | None,
) -> dict[str, Any]:
    """Answer a question about the video at ``path``: the run's result (answer, evidence with times, run id)."""
    video = service.roots.check(path)
    knobs = dict(options)
    for name, value in (("token_budget", token_budget), ("call_budget", call_budget)):
        if value is not None:
            knobs[name] = value
    result = await aask(
        video, question, choices, agent=agent, db=service.db, endpoint=service.endpoint, on_event=on_event, **knobs
    )
    return result.as_dict()


async def resume(service: Service, run_id: str, on_event: Events | None) -> dict[str, Any]:
    """Continue an interrupted run from its last checkpoint on the server's endpoint: its result.

    The stored run's video is checked against the roots before anything opens it.
    """
    request = await asyncio.to_thread(resume_request, run_id, service.db, EndpointChoice())
    service.roots.check(request.video)
    result = await answer(request, on_event, endpoint=service.endpoint)
    return result.as_dict()


def list_runs(service: Service, status: str | None, limit: int, agent: str | None = None) -> list[dict[str, Any]]:
    """The newest runs (of one agent, or any), with their status as shown (``stale``: its process is gone)."""
    if status is not None and status not in RUN_STATUSES:
        raise BadInputError(f"unknown status {status!r}; choose one of {', '.join(RUN_STATUSES)}")
    if agent is not None and agent not in agent_names():
        raise BadInputError(f"unknown agent {agent!r}; choose one of {', '.join(agent_names())}")
    if not 1 <= limit <= 1000:
        raise BadInputError(f"limit must be between 1 and 1000, got {limit}")
    search = RunSearch(status=status or "", agent=agent or "")
    store = TraceStore(service.db)
    try:
        found = recent_runs(store.engine, search, limit, LeaseTiming.from_env())
    finally:
        store.close()
    return [
        {
            "id": s.row.id,
            "status": s.status,
            "agent": s.row.agent,
            "created_at": s.row.created_at.isoformat(),
            "question": s.row.question,
            "answer": s.row.answer,
            "video": s.row.video_path,
            "error": s.row.error,
        }
        for s in found
    ]


async def read_trace(service: Service, run_id: str) -> dict[str, Any]:
    """A run as ``videoatlas trace --json`` shows it, the model calls summed up rather than listed."""
    trace = await load_trace(run_id, service.db)
    calls = trace.pop("calls")
    trace.pop("images", None)
    trace["calls"] = {"count": len(calls), "failed": sum(1 for c in calls if c.get("error"))}
    return trace


async def evidence_frames(
    service: Service, run_id: str, labels: Sequence[str], size: int
) -> list[tuple[dict[str, Any], bytes]]:
    """The frames a run's evidence points at, as (evidence item, PNG bytes); ``labels`` picks some (A, B...)."""
    if not 64 <= size <= 2048:
        raise BadInputError(f"size must be between 64 and 2048 pixels, got {size}")
    trace = await load_trace(run_id, service.db)
    evidence: list[dict[str, Any]] = trace["evidence"]
    if labels:
        known = {e["label"] for e in evidence}
        unknown = [label for label in labels if label not in known]
        if unknown:
            raise BadInputError(
                f"run {run_id} has no evidence {', '.join(unknown)} (it has {', '.join(sorted(known)) or 'none'})"
            )
        evidence = [e for e in evidence if e["label"] in set(labels)]
    if not evidence:
        raise BadInputError(f"run {run_id} has no evidence yet")
    if len(evidence) > MAX_FRAMES:
        raise BadInputError(f"{len(evidence)} frames asked for; at most {MAX_FRAMES} a call (name them by label)")
    video = service.roots.check(trace["run"]["video"])
    return await asyncio.to_thread(_render, str(video), evidence, size)


def _render(video: str, evidence: list[dict[str, Any]], size: int) -> list[tuple[dict[str, Any], bytes]]:
    source = open_source(video)
    try:
        frames = source.frames_at([float(e["time"]) for e in evidence], size)
    finally:
        source.close()
    out = []
    for item, frame in zip(evidence, frames, strict=True):
        image = render_zoom(frame, f"{item['label']} {format_ts(float(item['time']), 2)}")
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        out.append((item, buffer.getvalue()))
    return out


def probe_video(service: Service, path: str) -> dict[str, Any]:
    """What the video at ``path`` is: duration, frame rate, size, codec, audio."""
    return probe(service.roots.check(path)).as_dict()
