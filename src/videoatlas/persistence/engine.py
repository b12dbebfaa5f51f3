"""Engines over the trace database, and its tables made (or brought up to date) on first use."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import structlog
from sqlalchemy import create_engine, event, inspect
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError, ProgrammingError, SQLAlchemyError
from sqlalchemy.sql import text as sql_text

from videoatlas.errors import BadInputError, DatabaseDownError
from videoatlas.persistence.db import is_sqlite, redact_url, sqlalchemy_url
from videoatlas.persistence.lease import LeaseBase
from videoatlas.persistence.patience import is_connection_loss, mark_reached, retry_async
from videoatlas.persistence.tables import Base

log = structlog.get_logger(__name__)

_TABLES_LOCK_KEY = 0x76615F7461626C  # pg_advisory_lock key: "va_tabl" (the checkpointer's set-up has its own)


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


def open_engine(url: str, lost_ok: bool = False) -> Engine:
    """An engine over ``url`` with every table of the store made (and missing columns added).

    A database that cannot be used is a :class:`BadInputError` naming it, its password redacted;
    with ``lost_ok``, a lost or refused connection is raised as it is (for the caller to wait it out).
    """
    engine = make_engine(url)
    try:
        with _one_process_at_a_time(engine):
            Base.metadata.create_all(engine)
            LeaseBase.metadata.create_all(engine)  # added later: created here in databases made before it
            _add_missing_columns(engine)
    except SQLAlchemyError as exc:
        engine.dispose()
        if lost_ok and is_connection_loss(exc):
            raise
        reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
        raise BadInputError(f"cannot use the database {redact_url(url)}: {reason}") from None
    return engine


@contextmanager
def _one_process_at_a_time(engine: Engine) -> Iterator[None]:
    """On PostgreSQL, hold an advisory lock while the tables are made, so that concurrent makers queue.

    Tasks of one Slurm array start together on a fresh database: two ``CREATE TABLE`` of one table
    at once fail on PostgreSQL (``duplicate key value violates unique constraint
    "pg_type_typname_nsp_index"``) even though each checked first. The lock is polled with
    ``pg_try_advisory_lock`` in autocommit, so a waiter holds no transaction open (the checkpointer's
    set-up, which builds indexes CONCURRENTLY, waits for open transactions). SQLite needs none:
    its writers are serialised by ``BEGIN IMMEDIATE``.
    """
    if engine.dialect.name != "postgresql":
        yield
        return
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        take = sql_text("SELECT pg_try_advisory_lock(:key)")
        while not conn.execute(take, {"key": _TABLES_LOCK_KEY}).scalar():
            time.sleep(0.05)
        try:
            yield
        finally:
            conn.execute(sql_text("SELECT pg_advisory_unlock(:key)"), {"key": _TABLES_LOCK_KEY})


async def wait_for_database(url: str, patience_s: float) -> None:
    """Open ``url`` once, waiting up to ``patience_s`` while it cannot be reached; then it counts as reached.

    For a batch job (an ``eval run`` array task): its database may be restarting, or not reachable yet
    from the node, when the job starts. Waiting here, where an interactive command fails at once, lets
    the job ride that out; past the patience, :class:`~videoatlas.errors.DatabaseDownError` (exit 75: a
    temporary failure, run the same command again) naming the last reason. What is waited for is what
    :func:`~videoatlas.persistence.patience.is_connection_loss` counts (refused, unresolvable, a server
    not taking connections to that database), so a misspelt host or database name is waited for too
    before it is named; any other error (SQLite's) is raised at once. Each try runs in a thread; the
    wait between tries is the event loop's, so a SIGTERM ends it at once.
    """
    failures: list[BaseException] = []

    async def attempt() -> Engine:
        try:
            return await asyncio.to_thread(open_engine, url, True)
        except SQLAlchemyError as exc:
            failures.append(exc)
            raise

    try:
        engine = await retry_async(attempt, "database", patience_s)
    except DatabaseDownError:
        last = failures[-1]
        reason = str(getattr(last, "orig", None) or last).strip().splitlines()[0]
        raise DatabaseDownError(
            f"the database {redact_url(url)} could not be reached within {patience_s:g} s: {reason}"
        ) from None
    engine.dispose()
    mark_reached(url)  # from now on the run store and the checkpointer wait out a lost connection too


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
