"""The run and trace store: what the agent records about a run, written in the background.

Writes go through a queue to one background thread, so the agent never waits on the database and a
database error never stops a run: failed writes are logged and counted (``TraceStore.failed``).
Each write is one transaction; a lost connection is retried on a fresh one for the store's patience
(:mod:`~videoatlas.persistence.patience`), and so are the run's own reads and writes (its row, its lease).
A run's lease is claimed and given back here, with its row, in one transaction. The tables are
:mod:`~videoatlas.persistence.tables`, reading them is :mod:`~videoatlas.persistence.queries`
(the store's read methods hand over to it).
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

import structlog
from sqlalchemy import update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from videoatlas.errors import DatabaseDownError
from videoatlas.persistence import queries
from videoatlas.persistence.db import is_sqlite, redact_url
from videoatlas.persistence.engine import make_engine, open_engine
from videoatlas.persistence.lease import Holder, LeaseTiming, claim, holders, release
from videoatlas.persistence.patience import db_patience, mark_reached, retry_sync, was_reached
from videoatlas.persistence.tables import ArtifactRow, Base, ModelCallRow, NodeEventRow, RunRow, utc_now

__all__ = [
    "ArtifactRow",
    "Base",
    "ModelCallRow",
    "NodeEventRow",
    "RunRow",
    "TraceStore",
    "json_summary",
    "make_engine",
]
"""The tables and ``make_engine`` are named here too: callers that knew them as the store's still find them."""

log = structlog.get_logger(__name__)

_STOP = object()
T = TypeVar("T")


class TraceStore:
    """Writes traces in the background; reads them for the CLI.

    Use :meth:`shared` in the agent: one store (one engine, one writer thread) per database per
    process, so concurrent runs never contend with each other for a SQLite file.
    """

    _instances: ClassVar[dict[str, tuple[TraceStore, int]]] = {}
    _instances_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def shared(cls, url: str, patience_s: float | None = None) -> TraceStore:
        """The process's store for ``url`` (release it with :meth:`release`); ``patience_s``: see :meth:`__init__`."""
        with cls._instances_lock:
            store, users = cls._instances.get(url, (None, 0))
            if store is None:
                store = cls(url, patience_s)
            elif patience_s is not None:
                store.patience_s = patience_s
            cls._instances[url] = (store, users + 1)
            return store

    def release(self) -> None:
        """Give back a store obtained from :meth:`shared`; the last user closes it."""
        with self._instances_lock:
            store, users = self._instances.get(self.url, (None, 0))
            if store is not self:
                self.flush()
                return
            if users <= 1:
                del self._instances[self.url]
            else:
                self._instances[self.url] = (store, users - 1)
                self.flush()
                return
        self.close()

    def __init__(self, url: str, patience_s: float | None = None) -> None:
        """A store over ``url``; a lost database is waited for ``patience_s`` (default :func:`db_patience`).

        A database that never answered in this process is not waited for (a wrong ``--db`` fails at once).
        """
        self.url = url
        self.patience_s = db_patience() if patience_s is None else patience_s
        if was_reached(url):
            self.engine = retry_sync(lambda: open_engine(url, lost_ok=True), "run store", self.patience_s)
        else:
            self.engine = open_engine(url)
        mark_reached(url)
        self.failed = 0
        self.written = 0
        self._queue: queue.Queue[Any] = queue.Queue()
        self._seen_artifacts: set[str] = set()
        self._thread = threading.Thread(target=self._drain, name="videoatlas-trace", daemon=True)
        self._thread.start()

    def __repr__(self) -> str:
        return f"TraceStore({redact_url(self.url)})"

    # -- background writing ----------------------------------------------------------------------

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                self._queue.task_done()
                return
            try:
                self._write_with_retries(item)
                self.written += 1
            except (SQLAlchemyError, DatabaseDownError) as exc:
                self.failed += 1
                log.warning("trace_write_failed", error=str(exc).splitlines()[0], kind=type(item).__name__)
            finally:
                self._queue.task_done()

    def _patiently(self, work: Callable[[], T], what: str) -> T:
        return retry_sync(work, what, self.patience_s)

    def _write_with_retries(self, item: Any) -> None:
        """Write, again on a fresh connection after a lost one (see :mod:`~videoatlas.persistence.patience`)."""
        self._patiently(lambda: self._write_locked(item), "run store write")

    def _write_locked(self, item: Any, attempts: int = 20) -> None:
        """Write, waiting out a lock held by another process (bounded: about 20 s in all)."""
        for attempt in range(attempts):
            try:
                self._write(item)
                return
            except OperationalError as exc:
                if "locked" not in str(exc) or attempt == attempts - 1:
                    raise
                time.sleep(min(2.0, 0.05 * 2**attempt))

    def _write(self, item: Any) -> None:
        with Session(self.engine) as session, session.begin():
            if isinstance(item, ArtifactRow):
                table = Base.metadata.tables[ArtifactRow.__tablename__]
                values = {c.name: getattr(item, c.name) for c in table.columns}
                insert = sqlite_insert if is_sqlite(self.url) else pg_insert
                session.execute(insert(table).values(**values).on_conflict_do_nothing())
            elif isinstance(item, tuple) and item[0] == "update_run":
                _, run_id, values = item
                session.execute(update(RunRow).where(RunRow.id == run_id).values(updated_at=utc_now(), **values))
            else:
                session.merge(item) if isinstance(item, RunRow) else session.add(item)

    def flush(self, timeout: float = 30.0) -> None:
        """Wait until every queued write is done (or ``timeout`` passes)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)

    def close(self) -> None:
        """Finish queued writes and stop the writer."""
        self.flush()
        self._queue.put(_STOP)
        self._thread.join(timeout=30)
        self.engine.dispose()

    # -- what the agent records ------------------------------------------------------------------

    def start_run(self, row: RunRow) -> None:
        """Record a run as it starts (written now, not queued: its id must exist before anything else)."""

        def write() -> None:
            with Session(self.engine) as session, session.begin():
                session.merge(row)

        self._patiently(write, "run row")

    def update_run(self, run_id: str, **values: Any) -> None:
        """Change a run's status, answer, cost..."""
        self._queue.put(("update_run", run_id, values))

    def claim_run(self, run_id: str, timing: LeaseTiming, *, force: bool = False, **values: Any) -> str:
        """Take the run's lease (:func:`~videoatlas.persistence.lease.claim`); returns the owner id.

        ``values`` (a status...) are written to the run's row in the same transaction, so the run
        changes hands and state at once. Raises :class:`~videoatlas.errors.RunOwnedError`.
        """

        def take() -> str:
            with self.engine.begin() as conn:
                owner = claim(conn, run_id, timing, force=force)
                if values:
                    conn.execute(update(RunRow).where(RunRow.id == run_id).values(updated_at=utc_now(), **values))
            return owner

        return self._patiently(take, "run lease")

    def settle_run(self, run_id: str, owner: str, **values: Any) -> bool:
        """Write a run's final row and give its lease back in one transaction, if the lease is still ours.

        Queued writes go first, so none lands after the final status. False: another process took
        the run over; nothing was written.
        """
        self.flush(timeout=max(30.0, self.patience_s))

        def write() -> bool:
            with self.engine.begin() as conn:
                if not release(conn, run_id, owner):
                    return False
                if values:
                    conn.execute(update(RunRow).where(RunRow.id == run_id).values(updated_at=utc_now(), **values))
            return True

        return self._patiently(write, "run row")

    def holders(self, run_ids: Sequence[str], timing: LeaseTiming) -> dict[str, Holder]:
        """Who holds the leases of ``run_ids``, and whether they went stale."""
        return holders(self.engine, run_ids, timing)

    def node_event(
        self,
        run_id: str,
        node: str,
        phase: str,
        started: float,
        duration_s: float | None = None,
        worker: str | None = None,
        round_no: int | None = None,
        summary_in: str | None = None,
        summary_out: str | None = None,
        error: str | None = None,
    ) -> None:
        """A node started or ended."""
        self._queue.put(
            NodeEventRow(
                run_id=run_id,
                node=node,
                worker=worker,
                round=round_no,
                phase=phase,
                started_at=datetime.fromtimestamp(started, UTC),
                duration_s=duration_s,
                summary_in=summary_in,
                summary_out=summary_out,
                error=error,
            )
        )

    def model_call(self, run_id: str, record: Any) -> None:
        """A finished model call (from the client's :class:`CallRecord`)."""
        meta = record.meta or {}
        self._queue.put(
            ModelCallRow(
                run_id=run_id,
                node=record.node,
                worker=meta.get("worker"),
                round=meta.get("round"),
                step=meta.get("step"),
                schema=record.schema,
                started_at=datetime.fromtimestamp(record.started_at, UTC),
                latency_s=record.latency_s,
                prompt_tokens=record.prompt_tokens,
                completion_tokens=record.completion_tokens,
                cached_tokens=record.cached_tokens,
                images=list(meta.get("images", [])),
                outcome=record.outcome,
                attempts=record.attempts,
                parse_errors=list(record.parse_errors),
                reply_text=record.reply_text[:20000],
                error=record.error,
                template=meta.get("template"),
                role=record.role or None,
                thinking=record.thinking,
                reasoning=record.reasoning[:100000] or None,
                reasoning_tokens=record.reasoning_tokens,
                reasoning_estimated=record.reasoning_tokens_estimated,
            )
        )

    def artifact(self, sha256: str, kind: str, width: int, height: int, data: bytes) -> None:
        """An image the model saw (stored once per content hash)."""
        if sha256 in self._seen_artifacts:
            return
        self._seen_artifacts.add(sha256)
        self._queue.put(
            ArtifactRow(sha256=sha256, kind=kind[:64], width=width, height=height, data=data, created_at=utc_now())
        )

    # -- reading (see :mod:`videoatlas.persistence.queries`) ---------------------------------------

    def run(self, run_id: str) -> RunRow | None:
        """One run by id (or by a unique id prefix)."""
        return self._patiently(lambda: queries.find_run(self.engine, run_id), "run row")

    def calls(self, run_id: str) -> list[ModelCallRow]:
        """A run's model calls in time order."""
        return queries.run_calls(self.engine, run_id)

    def events(self, run_id: str) -> list[NodeEventRow]:
        """A run's node events in time order."""
        return queries.run_events(self.engine, run_id)

    def call_totals(self, run_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        """Model calls and tokens spent so far per run (a run's cost before it ends)."""
        return queries.call_totals(self.engine, run_ids)

    def artifacts(self, shas: Sequence[str]) -> dict[str, ArtifactRow]:
        """Stored images by hash."""
        return queries.artifacts(self.engine, shas)


def json_summary(value: Any, limit: int = 300) -> str:
    """A short JSON rendering of a node's input or output for the node-events table."""
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"
