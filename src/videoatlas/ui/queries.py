"""What the web UI reads from the trace store: pages of runs (filtered and paged in SQL), runs by id, images.

Read-only: nothing here writes. Every function takes an engine, so one engine serves every request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import and_, exists, func, or_, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from videoatlas.persistence.store import ArtifactRow, NodeEventRow, RunRow

STALE_AFTER = timedelta(minutes=15)
"""A run still marked running with no sign of life for this long is shown as stale (its process died)."""

STATUSES = ("running", "stale", "finished", "failed", "interrupted")
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


def _alive_since(cutoff: datetime) -> ColumnElement[bool]:
    return exists().where(and_(NodeEventRow.run_id == RunRow.id, NodeEventRow.started_at > cutoff))


def _where(flt: RunFilter, now: datetime) -> list[ColumnElement[bool]]:
    cutoff = now - STALE_AFTER
    clauses: list[ColumnElement[bool]] = []
    if flt.status == "stale":
        clauses += [RunRow.status == "running", RunRow.updated_at < cutoff, ~_alive_since(cutoff)]
    elif flt.status == "running":
        clauses += [RunRow.status == "running", or_(RunRow.updated_at >= cutoff, _alive_since(cutoff))]
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


def run_summary(row: RunRow, last_activity: datetime | None, now: datetime) -> dict[str, Any]:
    """A run as the runs page and an eval's questions show it."""
    cost = row.cost or {}
    created = _aware(row.created_at)
    activity = max(t for t in (_aware(row.updated_at), _aware(last_activity), created) if t is not None)
    status = row.status
    if status == "running" and now - activity > STALE_AFTER:
        status = "stale"
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


def _last_activity(session: Session, ids: Sequence[str]) -> dict[str, datetime]:
    if not ids:
        return {}
    query = (
        select(NodeEventRow.run_id, func.max(NodeEventRow.started_at))
        .where(NodeEventRow.run_id.in_(list(ids)))
        .group_by(NodeEventRow.run_id)
    )
    return {run_id: when for run_id, when in session.execute(query)}


def runs_page(engine: Engine, flt: RunFilter, page_size: int = PAGE_SIZE) -> RunsPage:
    """The runs matching ``flt``, newest first, one page of them (filtered, counted and cut in SQL)."""
    now = _now()
    clauses = _where(flt, now)
    with Session(engine) as session:
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
        running = [r.id for r in rows if r.status == "running"]
        activity = _last_activity(session, running)
        agents = sorted(session.scalars(select(RunRow.agent).distinct()))
        prompt_sets = sorted(session.scalars(select(RunRow.prompt_set).distinct()))
    return RunsPage(
        rows=[run_summary(r, activity.get(r.id), now) for r in rows],
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
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = list(session.scalars(select(RunRow).where(RunRow.id.in_(chunk))))
            activity = _last_activity(session, [r.id for r in rows if r.status == "running"])
            out.update({r.id: run_summary(r, activity.get(r.id), now) for r in rows})
    return out


def image(engine: Engine, sha: str) -> bytes | None:
    """A stored image by its content hash (None: the store does not hold it)."""
    with Session(engine) as session:
        return session.scalar(select(ArtifactRow.data).where(ArtifactRow.sha256 == sha))
