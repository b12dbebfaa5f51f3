"""What the web UI reads from the trace store: pages of runs (filtered and paged in SQL), runs by id, images.

Read-only: nothing here writes. Every function takes an engine, so one engine serves every request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import exists, func, or_, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from videoatlas.persistence.lease import LeaseRow, LeaseTiming, db_now
from videoatlas.persistence.statuses import RUN_STATUSES
from videoatlas.persistence.store import ArtifactRow, RunRow

STATUSES = RUN_STATUSES
"""``stale``: stored as running, but no live lease: its process stopped renewing it (killed, or lost)."""
PAGE_SIZE = 50


@dataclass(slots=True)
class RunFilter:
    """What the runs page asks for: every field optional."""

    status: str = ""
    video: str = ""
    agent: str = ""
    prompt_set: str = ""
    text: str = ""
    page: int = 1

    def as_query(self, **override: Any) -> dict[str, str]:
        """The filter as URL parameters (empty ones and page 1 left out), with ``override`` applied."""
        values: dict[str, Any] = {
            "status": self.status,
            "video": self.video,
            "agent": self.agent,
            "prompt_set": self.prompt_set,
            "q": self.text,
            "page": self.page,
        }
        values.update(override)
        return {k: str(v) for k, v in values.items() if v not in ("", None) and not (k == "page" and v == 1)}


@dataclass(slots=True)
class RunsPage:
    """One page of runs and what it takes to page on."""

    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int
    agents: list[str] = field(default_factory=list)
    prompt_sets: list[str] = field(default_factory=list)


def _now() -> datetime:
    return datetime.now(UTC)


def _aware(when: datetime | None) -> datetime | None:
    """SQLite gives naive datetimes back (stored as UTC): make every time comparable."""
    if when is None:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _live_lease(cutoff: float) -> ColumnElement[bool]:
    """The run's owner renewed its lease after ``cutoff`` (seconds since the epoch, the database's clock)."""
    return exists().where(LeaseRow.run_id == RunRow.id, LeaseRow.heartbeat_at > cutoff)


def _lease_cutoff(session: Session) -> float:
    """Heartbeats older than this are stale (``VIDEOATLAS_LEASE_TIMEOUT``, as ``videoatlas runs`` uses it)."""
    now = float(session.scalar(select(db_now())) or 0.0)
    return now - LeaseTiming.from_env().timeout_s


def _live_ids(session: Session, ids: Sequence[str], cutoff: float) -> set[str]:
    if not ids:
        return set()
    query = select(LeaseRow.run_id).where(LeaseRow.run_id.in_(list(ids)), LeaseRow.heartbeat_at > cutoff)
    return set(session.scalars(query))


def _where(flt: RunFilter, cutoff: float) -> list[ColumnElement[bool]]:
    clauses: list[ColumnElement[bool]] = []
    if flt.status == "stale":
        clauses += [RunRow.status == "running", ~_live_lease(cutoff)]
    elif flt.status == "running":
        clauses += [RunRow.status == "running", _live_lease(cutoff)]
    elif flt.status:
        clauses.append(RunRow.status == flt.status)
    if flt.video:
        clauses.append(RunRow.video_path.contains(flt.video, autoescape=True))
    if flt.agent:
        clauses.append(RunRow.agent == flt.agent)
    if flt.prompt_set:
        clauses.append(RunRow.prompt_set == flt.prompt_set)
    if flt.text:
        needle = f"%{flt.text.lower()}%"
        clauses.append(
            or_(
                func.lower(RunRow.question).like(needle),
                func.lower(func.coalesce(RunRow.answer, "")).like(needle),
                RunRow.id.startswith(flt.text, autoescape=True),
            )
        )
    return clauses


def run_summary(row: RunRow, live: bool, now: datetime) -> dict[str, Any]:
    """A run as the runs page and an eval's questions show it (``live``: its owner holds a fresh lease)."""
    cost = row.cost or {}
    created = _aware(row.created_at)
    status = "stale" if row.status == "running" and not live else row.status
    wall = cost.get("wall_s")
    if wall is None and row.status == "running" and created is not None:
        wall = (now - created).total_seconds()
    return {
        "id": row.id,
        "status": status,
        "agent": row.agent,
        "video": row.video_path,
        "question": row.question,
        "choices": row.choices,
        "answer": row.answer,
        "answer_index": row.answer_index,
        "tokens": cost.get("tokens"),
        "calls": cost.get("calls"),
        "wall_s": wall,
        "created_at": created,
        "prompt_set": row.prompt_set,
        "error": row.error,
    }


def runs_page(engine: Engine, flt: RunFilter, page_size: int = PAGE_SIZE) -> RunsPage:
    """The runs matching ``flt``, newest first, one page of them (filtered, counted and cut in SQL)."""
    now = _now()
    with Session(engine) as session:
        cutoff = _lease_cutoff(session)
        clauses = _where(flt, cutoff)
        total = session.scalar(select(func.count()).select_from(RunRow).where(*clauses)) or 0
        pages = max(1, -(-total // page_size))
        page = min(max(1, flt.page), pages)
        query = (
            select(RunRow)
            .where(*clauses)
            .order_by(RunRow.created_at.desc(), RunRow.id)
            .offset((page - 1) * page_size)
            .limit(page_size)
        )
        rows = list(session.scalars(query))
        live = _live_ids(session, [r.id for r in rows if r.status == "running"], cutoff)
        agents = sorted(session.scalars(select(RunRow.agent).distinct()))
        prompt_sets = sorted(session.scalars(select(RunRow.prompt_set).distinct()))
    return RunsPage(
        rows=[run_summary(r, r.id in live, now) for r in rows],
        total=total,
        page=page,
        pages=pages,
        agents=agents,
        prompt_sets=prompt_sets,
    )


def runs_by_id(engine: Engine, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Runs by exact id (those the store holds), as :func:`run_summary` shows them."""
    wanted = sorted(set(ids))
    now = _now()
    out: dict[str, dict[str, Any]] = {}
    with Session(engine) as session:
        cutoff = _lease_cutoff(session)
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = list(session.scalars(select(RunRow).where(RunRow.id.in_(chunk))))
            live = _live_ids(session, [r.id for r in rows if r.status == "running"], cutoff)
            out.update({r.id: run_summary(r, r.id in live, now) for r in rows})
    return out


def image(engine: Engine, sha: str) -> bytes | None:
    """A stored image by its content hash (None: the store does not hold it)."""
    with Session(engine) as session:
        return session.scalar(select(ArtifactRow.data).where(ArtifactRow.sha256 == sha))
