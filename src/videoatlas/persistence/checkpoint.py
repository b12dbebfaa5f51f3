"""One factory for LangGraph checkpointers: SQLite by default, PostgreSQL by URL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from videoatlas.errors import BadInputError
from videoatlas.persistence.db import is_sqlite, libpq_url, redact_url, sqlite_path

_SETUP_LOCK_KEY = 0x7669646561746C  # pg_advisory_lock key: "videatl"
_STATE_TYPES = ("FrameRef", "Evidence", "View", "Target", "Cost", "Step", "WorkerReport", "Marked", "Hint")


def serializer() -> JsonPlusSerializer:
    """The checkpoint serializer, allowed to rebuild exactly our state types (and LangGraph's own)."""
    return JsonPlusSerializer(allowed_msgpack_modules=[("videoatlas.state.models", name) for name in _STATE_TYPES])


@asynccontextmanager
async def open_checkpointer(url: str) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """An async checkpointer on ``url`` with its tables created; closed on exit."""
    if is_sqlite(url):
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = Path(sqlite_path(url))
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(str(path), timeout=60)
        try:
            # WAL lets many runs read while one writes; the busy timeout waits instead of failing
            # with "database is locked" when several processes write at once.
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute("PRAGMA busy_timeout=60000")
            saver = AsyncSqliteSaver(conn, serde=serializer())
            await saver.setup()
            yield saver
        finally:
            await conn.close()
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg import AsyncConnection, OperationalError
    from psycopg.rows import dict_row

    try:
        pg_conn = await AsyncConnection.connect(libpq_url(url), autocommit=True, row_factory=dict_row)
    except OperationalError as exc:
        raise BadInputError(f"cannot connect to {redact_url(url)}: {str(exc).strip().splitlines()[0]}") from None
    try:
        pg_saver = AsyncPostgresSaver(pg_conn, serde=serializer())
        # Several runs may start at once on a fresh database: create the tables one at a time.
        await pg_conn.execute("SELECT pg_advisory_lock(%s)", (_SETUP_LOCK_KEY,))
        try:
            await pg_saver.setup()
        finally:
            await pg_conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK_KEY,))
        yield pg_saver
    finally:
        await pg_conn.close()
