"""Runs as the web UI lists them: the runs page's filter as URL parameters, and each run as a table row.

The reading itself (filtering, paging, the status as shown) is :mod:`videoatlas.persistence.queries`';
here the runs are only shaped for the templates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Engine

from videoatlas.persistence import queries
from videoatlas.persistence.queries import RunSearch, ShownRun
from videoatlas.persistence.statuses import RUN_STATUSES
from videoatlas.persistence.tables import aware

STATUSES = RUN_STATUSES
"""``stale``: stored as running, but no live lease: its process stopped renewing it (killed, or lost)."""
PAGE_SIZE = 50


@dataclass(frozen=True, slots=True)
class RunFilter(RunSearch):
    """What the runs page asks for: a search of the runs (every field optional), and which page of it."""

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


def run_summary(shown: ShownRun, now: datetime) -> dict[str, Any]:
    """A run as the runs page and an eval's questions show it (a running run's wall time counted up to ``now``)."""
    row = shown.row
    cost = row.cost or {}
    created = aware(row.created_at)
    wall = cost.get("wall_s")
    if wall is None and row.status == "running" and created is not None:
        wall = (now - created).total_seconds()
    return {
        "id": row.id,
        "status": shown.status,
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
    """The runs matching ``flt``, newest first, one page of them."""
    found = queries.runs_page(engine, flt, flt.page, page_size)
    now = datetime.now(UTC)
    return RunsPage(
        rows=[run_summary(s, now) for s in found.runs],
        total=found.total,
        page=found.page,
        pages=found.pages,
        agents=found.agents,
        prompt_sets=found.prompt_sets,
    )


def runs_by_id(engine: Engine, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Runs by exact id (those the store holds), as :func:`run_summary` shows them."""
    now = datetime.now(UTC)
    return {rid: run_summary(s, now) for rid, s in queries.runs_by_id(engine, ids).items()}
