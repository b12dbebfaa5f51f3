"""What is read back from the trace store: runs listed (filtered, paged), runs by id, a run's calls and events, images.

Read-only, and every function takes an engine, so one engine serves every caller (the CLI's
``runs``, ``trace`` and ``report``, each request of the web UI). A run's status comes back as it
is shown (:func:`~videoatlas.persistence.lease.effective_status`): filtering on ``stale`` or
``running`` uses the same rule in SQL, so a listing and its rows never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import func, or_, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from videoatlas.persistence.lease import Holder, LeaseTiming, effective_status, holders_in, live_holders, status_where
from videoatlas.persistence.tables import ArtifactRow, ModelCallRow, NodeEventRow, RunRow

_CHUNK = 500
"""Ids per ``IN (...)`` list: well under every backend's limit on bound parameters."""


@dataclass(frozen=True, slots=True)
class RunSearch:
    """Which runs to list: every field optional (empty: any)."""

    status: str = ""
    """A status as shown (``stale`` included)."""
    video: str = ""
    """Part of the video's path."""
    agent: str = ""
    prompt_set: str = ""
    text: str = ""
    """Part of the question or the answer (any case), or the start of the run id."""


@dataclass(frozen=True, slots=True)
class ShownRun:
    """A run's row with its status as shown and the lease behind that status."""

    row: RunRow
    status: str
    """``row.status``, except ``stale`` for a running run whose owner is gone."""
    holder: Holder | None
    """Who holds the run's lease (None: nobody, or not read: only running runs have one)."""


@dataclass(frozen=True, slots=True)
class RunsPage:
    """One page of the runs a search found, and what it takes to page on and refine the search."""

    runs: list[ShownRun]
    total: int
    page: int
    """1-based, within ``1..pages``."""
    pages: int
    agents: list[str] = field(default_factory=list)
    """Every agent and prompt set in the store (the choices of a search)."""
    prompt_sets: list[str] = field(default_factory=list)


def _where(search: RunSearch, live: Sequence[str]) -> list[ColumnElement[bool]]:
    clauses: list[ColumnElement[bool]] = []
    if search.status:
        clauses.append(status_where(search.status, live))
    if search.video:
        clauses.append(RunRow.video_path.contains(search.video, autoescape=True))
    if search.agent:
        clauses.append(RunRow.agent == search.agent)
    if search.prompt_set:
        clauses.append(RunRow.prompt_set == search.prompt_set)
    if search.text:
        needle = f"%{search.text.lower()}%"
        clauses.append(
            or_(
                func.lower(RunRow.question).like(needle),
                func.lower(func.coalesce(RunRow.answer, "")).like(needle),
                RunRow.id.startswith(search.text, autoescape=True),
            )
        )
    return clauses


NEWEST_FIRST = (RunRow.created_at.desc(), RunRow.id)
"""Runs newest first; the id orders runs made at the same moment, so pages never overlap."""


def runs_page(
    engine: Engine, search: RunSearch, page: int, page_size: int, timing: LeaseTiming | None = None
) -> RunsPage:
    """The runs ``search`` finds, newest first, page ``page`` of them (filtered, counted and cut in SQL).

    ``timing``: when a lease goes stale (default ``VIDEOATLAS_LEASE_TIMEOUT``, as ``videoatlas runs``).
    """
    timing = timing or LeaseTiming.from_env()
    with Session(engine) as session:
        live = live_holders(session.connection(), timing)
        clauses = _where(search, sorted(live))
        total = session.scalar(select(func.count()).select_from(RunRow).where(*clauses)) or 0
        pages = max(1, -(-total // page_size))
        page = min(max(1, page), pages)
        query = select(RunRow).where(*clauses).order_by(*NEWEST_FIRST).offset((page - 1) * page_size).limit(page_size)
        rows = list(session.scalars(query))
        agents = sorted(session.scalars(select(RunRow.agent).distinct()))
        prompt_sets = sorted(session.scalars(select(RunRow.prompt_set).distinct()))
    shown = [ShownRun(r, effective_status(r.status, live.get(r.id)), live.get(r.id)) for r in rows]
    return RunsPage(shown, total, page, pages, agents, prompt_sets)


def recent_runs(engine: Engine, search: RunSearch, limit: int, timing: LeaseTiming) -> list[ShownRun]:
    """The ``limit`` newest runs ``search`` finds (its status as shown), each with its lease's holder.

    A stale run keeps its holder (the owner that stopped), so a listing can say who it was.
    """
    with Session(engine) as session:
        conn = session.connection()
        live = sorted(live_holders(conn, timing)) if search.status else []
        query = select(RunRow).where(*_where(search, live)).order_by(*NEWEST_FIRST).limit(limit)
        rows = list(session.scalars(query))
        owners = holders_in(conn, [r.id for r in rows if r.status == "running"], timing)
    shown = [ShownRun(r, effective_status(r.status, owners.get(r.id)), owners.get(r.id)) for r in rows]
    # A lease that changed hands between the two reads: the row is left out rather than shown under another status.
    return [s for s in shown if not search.status or s.status == search.status]


def runs_by_id(engine: Engine, ids: Sequence[str], timing: LeaseTiming | None = None) -> dict[str, ShownRun]:
    """Runs by exact id (those the store holds), with their status as shown."""
    timing = timing or LeaseTiming.from_env()
    wanted = sorted(set(ids))
    out: dict[str, ShownRun] = {}
    with Session(engine) as session:
        live = live_holders(session.connection(), timing)
        for start in range(0, len(wanted), _CHUNK):
            rows = session.scalars(select(RunRow).where(RunRow.id.in_(wanted[start : start + _CHUNK])))
            out.update({r.id: ShownRun(r, effective_status(r.status, live.get(r.id)), live.get(r.id)) for r in rows})
    return out


def find_run(engine: Engine, run_id: str) -> RunRow | None:
    """One run by id, or by an id prefix that only one run has."""
    with Session(engine) as session:
        row = session.get(RunRow, run_id)
        if row is not None:
            return row
        matches = list(session.scalars(select(RunRow).where(RunRow.id.startswith(run_id)).limit(2)))
        return matches[0] if len(matches) == 1 else None


def run_calls(engine: Engine, run_id: str) -> list[ModelCallRow]:
    """A run's model calls in time order."""
    with Session(engine) as session:
        query = select(ModelCallRow).where(ModelCallRow.run_id == run_id).order_by(ModelCallRow.started_at)
        return list(session.scalars(query))


def run_events(engine: Engine, run_id: str) -> list[NodeEventRow]:
    """A run's node events in the order they were written."""
    with Session(engine) as session:
        query = select(NodeEventRow).where(NodeEventRow.run_id == run_id).order_by(NodeEventRow.id)
        return list(session.scalars(query))


def call_totals(engine: Engine, run_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    """Model calls and tokens spent so far per run, from the calls recorded (a run's cost before it ends)."""
    if not run_ids:
        return {}
    query = (
        select(
            ModelCallRow.run_id,
            func.count(),
            func.coalesce(func.sum(ModelCallRow.prompt_tokens + ModelCallRow.completion_tokens), 0),
        )
        .where(ModelCallRow.run_id.in_(list(run_ids)))
        .group_by(ModelCallRow.run_id)
    )
    with Session(engine) as session:
        return {rid: {"calls": int(n), "tokens": int(t)} for rid, n, t in session.execute(query)}


def artifacts(engine: Engine, shas: Sequence[str]) -> dict[str, ArtifactRow]:
    """Stored images by content hash (those the store holds)."""
    if not shas:
        return {}
    with Session(engine) as session:
        rows = session.scalars(select(ArtifactRow).where(ArtifactRow.sha256.in_(list(set(shas)))))
        return {r.sha256: r for r in rows}


def image(engine: Engine, sha: str) -> bytes | None:
    """A stored image's bytes by its content hash (None: the store does not hold it)."""
    with Session(engine) as session:
        return session.scalar(select(ArtifactRow.data).where(ArtifactRow.sha256 == sha))
