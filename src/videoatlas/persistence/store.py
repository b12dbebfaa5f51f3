"""The run and trace store (SQLAlchemy 2.0): runs, node events, model calls, and the images the model saw.

Writes go through a queue to one background thread, so the agent never waits on the database and a
database error never stops a run: failed writes are logged and counted (``TraceStore.failed``).
Reads (``runs``, ``trace``, ``report``) use the same tables directly.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar

import structlog
from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    create_engine,
    event,
    func,
    inspect,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError, ProgrammingError, SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.sql import text as sql_text

from videoatlas.errors import BadInputError
from videoatlas.persistence.db import is_sqlite, redact_url, sqlalchemy_url
from videoatlas.persistence.lease import Holder, LeaseBase, LeaseTiming, claim, holders, release

log = structlog.get_logger(__name__)


def _now() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """Tables of the trace store (prefixed ``va_`` to live beside LangGraph's checkpoint tables)."""


class RunRow(Base):
    """One question asked of one video."""

    __tablename__ = "va_runs"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    status: Mapped[str] = mapped_column(String(16), index=True)
    agent: Mapped[str] = mapped_column(String(32))
    question: Mapped[str] = mapped_column(Text)
    choices: Mapped[list[str]] = mapped_column(JSON)
    video_path: Mapped[str] = mapped_column(Text)
    video_identity: Mapped[str] = mapped_column(String(64))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    endpoint: Mapped[dict[str, Any]] = mapped_column(JSON)
    prompt_set: Mapped[str] = mapped_column(Text)
    prompt_sha: Mapped[str] = mapped_column(String(32))
    templates: Mapped[dict[str, str]] = mapped_column(JSON)
    subtitles: Mapped[str | None] = mapped_column(Text, nullable=True)
    subtitle_offset: Mapped[float] = mapped_column(Float, default=0.0)
    answer: Mapped[str | None] = mapped_column(Text, nullable=True)
    answer_index: Mapped[int | None] = mapped_column(Integer, nullable=True)
    reasoning: Mapped[str | None] = mapped_column(Text, nullable=True)
    cost: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    stop_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


class NodeEventRow(Base):
    """One node execution (Master node or a worker's step node)."""

    __tablename__ = "va_node_events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("va_runs.id"), index=True)
    node: Mapped[str] = mapped_column(String(64))
    worker: Mapped[str | None] = mapped_column(String(32), nullable=True)
    round: Mapped[int | None] = mapped_column(Integer, nullable=True)
    phase: Mapped[str] = mapped_column(String(8))
    """start or end."""
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    duration_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    summary_in: Mapped[str | None] = mapped_column(Text, nullable=True)
    summary_out: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


class ModelCallRow(Base):
    """One structured model call and how it ended."""

    __tablename__ = "va_model_calls"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("va_runs.id"), index=True)
    node: Mapped[str] = mapped_column(String(64))
    worker: Mapped[str | None] = mapped_column(String(32), nullable=True)
    round: Mapped[int | None] = mapped_column(Integer, nullable=True)
    step: Mapped[int | None] = mapped_column(Integer, nullable=True)
    schema: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    latency_s: Mapped[float] = mapped_column(Float)
    prompt_tokens: Mapped[int] = mapped_column(Integer)
    completion_tokens: Mapped[int] = mapped_column(Integer)
    cached_tokens: Mapped[int] = mapped_column(Integer)
    images: Mapped[list[str]] = mapped_column(JSON)
    outcome: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer)
    parse_errors: Mapped[list[str]] = mapped_column(JSON)
    reply_text: Mapped[str] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    template: Mapped[str | None] = mapped_column(Text, nullable=True)
    role: Mapped[str | None] = mapped_column(String(32), nullable=True)
    thinking: Mapped[bool | None] = mapped_column(nullable=True)
    """What the call asked of a reasoning model (None: nothing, the server's default)."""
    reasoning: Mapped[str | None] = mapped_column(Text, nullable=True)
    reasoning_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    reasoning_estimated: Mapped[bool | None] = mapped_column(nullable=True)


class ArtifactRow(Base):
    """A rendered image the model saw, stored once by content hash."""

    __tablename__ = "va_artifacts"
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(64))
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)


def _add_missing_columns(engine: Engine) -> None:
    """Add the nullable columns a table gained after a database was made (``create_all`` adds only tables).

    Two processes may do it at once: a column the other one added first is not an error.
    """
    for table in Base.metadata.sorted_tables:
        present = {c["name"] for c in inspect(engine).get_columns(table.name)}
        for column in table.columns:
            if column.name in present or not column.nullable:
                continue
            kind = column.type.compile(dialect=engine.dialect)
            try:
                with engine.begin() as conn:
                    conn.execute(sql_text(f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {kind}'))
            except (OperationalError, ProgrammingError):
                if column.name not in {c["name"] for c in inspect(engine).get_columns(table.name)}:
                    raise
            log.info("trace_store_column_added", table=table.name, column=column.name)


_STOP = object()


def make_engine(url: str) -> Engine:
    """A SQLAlchemy engine; SQLite gets WAL and a long busy timeout (many runs share one file)."""
    if is_sqlite(url):
        engine = create_engine(sqlalchemy_url(url), connect_args={"timeout": 60})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA busy_timeout=60000")
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            # Take the write lock when the transaction starts, waiting for it (busy timeout), rather
            # than upgrading a read transaction later, which SQLite refuses at once when another
            # connection wrote in between ("database is locked").
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    return create_engine(sqlalchemy_url(url), pool_pre_ping=True)


class TraceStore:
    """Writes traces in the background; reads them for the CLI.

    Use :meth:`shared` in the agent: one store (one engine, one writer thread) per database per
    process, so concurrent runs never contend with each other for a SQLite file.
    """

    _instances: ClassVar[dict[str, tuple[TraceStore, int]]] = {}
    _instances_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def shared(cls, url: str) -> TraceStore:
        """The process's store for ``url`` (release it with :meth:`release`)."""
        with cls._instances_lock:
            store, users = cls._instances.get(url, (None, 0))
            if store is None:
                store = cls(url)
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

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        try:
            Base.metadata.create_all(self.engine)
            LeaseBase.metadata.create_all(self.engine)  # added later: created here in databases made before it
            _add_missing_columns(self.engine)
        except SQLAlchemyError as exc:
            self.engine.dispose()
            reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
            raise BadInputError(f"cannot use the database {redact_url(url)}: {reason}") from None
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
            except SQLAlchemyError as exc:
                self.failed += 1
                log.warning("trace_write_failed", error=str(exc).splitlines()[0], kind=type(item).__name__)
            finally:
                self._queue.task_done()

    def _write_with_retries(self, item: Any, attempts: int = 20) -> None:
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
                session.execute(update(RunRow).where(RunRow.id == run_id).values(updated_at=_now(), **values))
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
        with Session(self.engine) as session, session.begin():
            session.merge(row)

    def update_run(self, run_id: str, **values: Any) -> None:
        """Change a run's status, answer, cost..."""
        self._queue.put(("update_run", run_id, values))

    def claim_run(self, run_id: str, timing: LeaseTiming, *, force: bool = False, **values: Any) -> str:
        """Take the run's lease (:func:`~videoatlas.persistence.lease.claim`); returns the owner id.

        ``values`` (a status...) are written to the run's row in the same transaction, so the run
        changes hands and state at once. Raises :class:`~videoatlas.errors.RunOwnedError`.
        """
        with self.engine.begin() as conn:
            owner = claim(conn, run_id, timing, force=force)
            if values:
                conn.execute(update(RunRow).where(RunRow.id == run_id).values(updated_at=_now(), **values))
        return owner

    def settle_run(self, run_id: str, owner: str, **values: Any) -> bool:
        """Write a run's final row and give its lease back in one transaction, if the lease is still ours.

        Queued writes go first, so none lands after the final status. False: another process took
        the run over; nothing was written.
        """
        self.flush()
        with self.engine.begin() as conn:
            if not release(conn, run_id, owner):
                return False
            if values:
                conn.execute(update(RunRow).where(RunRow.id == run_id).values(updated_at=_now(), **values))
        return True

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
            ArtifactRow(sha256=sha256, kind=kind[:64], width=width, height=height, data=data, created_at=_now())
        )

    # -- reading -----------------------------------------------------------------------------------

    def runs(self, status: str | None = None, limit: int = 200) -> list[RunRow]:
        """Recent runs, newest first."""
        with Session(self.engine) as session:
            query = select(RunRow).order_by(RunRow.created_at.desc()).limit(limit)
            if status:
                query = query.where(RunRow.status == status)
            return list(session.scalars(query))

    def run(self, run_id: str) -> RunRow | None:
        """One run by id (or by a unique id prefix)."""
        with Session(self.engine) as session:
            row = session.get(RunRow, run_id)
            if row is not None:
                return row
            matches = list(session.scalars(select(RunRow).where(RunRow.id.startswith(run_id)).limit(2)))
            return matches[0] if len(matches) == 1 else None

    def calls(self, run_id: str) -> list[ModelCallRow]:
        """A run's model calls in time order."""
        with Session(self.engine) as session:
            query = select(ModelCallRow).where(ModelCallRow.run_id == run_id).order_by(ModelCallRow.started_at)
            return list(session.scalars(query))

    def events(self, run_id: str) -> list[NodeEventRow]:
        """A run's node events in time order."""
        with Session(self.engine) as session:
            query = select(NodeEventRow).where(NodeEventRow.run_id == run_id).order_by(NodeEventRow.id)
            return list(session.scalars(query))

    def call_totals(self, run_ids: Sequence[str]) -> dict[str, dict[str, int]]:
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
        with Session(self.engine) as session:
            return {rid: {"calls": int(n), "tokens": int(t)} for rid, n, t in session.execute(query)}

    def artifacts(self, shas: Sequence[str]) -> dict[str, ArtifactRow]:
        """Stored images by hash."""
        if not shas:
            return {}
        with Session(self.engine) as session:
            rows = session.scalars(select(ArtifactRow).where(ArtifactRow.sha256.in_(list(set(shas)))))
            return {r.sha256: r for r in rows}


def json_summary(value: Any, limit: int = 300) -> str:
    """A short JSON rendering of a node's input or output for the node-events table."""
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"
