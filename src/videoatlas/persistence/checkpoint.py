"""One factory for LangGraph checkpointers: SQLite by default, PostgreSQL by URL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from videoatlas.errors import BadInputError
from videoatlas.persistence.db import is_sqlite, libpq_url, redact_url, sqlite_path
from videoatlas.persistence.patience import db_patience, mark_reached, retry_async, was_reached
from videoatlas.state.models import Frozen

_SETUP_LOCK_KEY = 0x7669646561746C  # pg_advisory_lock key: "videatl"


def state_types() -> list[tuple[str, str]]:
    """Every state record class there is: :class:`Frozen` and its subclasses, wherever an agent defines them.

    Each is named under its module and under every module that defined it before (``Frozen.former_modules``).
    """
    found: list[type[Frozen]] = []
    todo: list[type[Frozen]] = [Frozen]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return sorted({(module, cls.__name__) for cls in found for module in (cls.__module__, *cls.former_modules)})


def serializer() -> JsonPlusSerializer:
    """The checkpoint serializer, allowed to rebuild exactly our state records (and LangGraph's own).

    Agents define their records as :class:`Frozen` subclasses; an agent's modules are imported
    before its runs are read back (the registry imports every agent), so all of them are known.
    """
    return JsonPlusSerializer(allowed_msgpack_modules=state_types())


class _Shared:
    """One SQLite checkpointer per database file per process, shared by every run in the process.

    Several connections writing one SQLite file from one process only contend with each other
    ("database is locked"); one connection, whose saver serialises its own access, does not.
    """

    def __init__(self) -> None:
        self.entries: dict[str, tuple[Any, Any, int]] = {}
        self.lock = asyncio.Lock()


_shared: dict[int, _Shared] = {}
_pg_ready: set[str] = set()


async def _setup_once(conn: Any, saver: Any) -> None:
    """Create the checkpoint tables, one process at a time.

    LangGraph's migrations build indexes CONCURRENTLY, which waits for every open transaction; a
    session blocked inside ``pg_advisory_lock`` would be one, and the two would deadlock. So the
    lock is taken with short ``pg_try_advisory_lock`` polls that hold no transaction while waiting.
    """
    while True:
        cur = await conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", (_SETUP_LOCK_KEY,))
        row = await cur.fetchone()
        if row and row["ok"]:
            break
        await asyncio.sleep(0.05)
    try:
        await saver.setup()
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK_KEY,))


def _registry() -> _Shared:
    loop_id = id(asyncio.get_running_loop())  # asyncio objects belong to one event loop
    if loop_id not in _shared:
        _shared[loop_id] = _Shared()
    return _shared[loop_id]


@asynccontextmanager
async def open_checkpointer(url: str, patience_s: float | None = None) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """An async checkpointer on ``url`` with its tables created; released on exit.

    On PostgreSQL a lost connection is replaced and the operation repeated for ``patience_s``
    (default :func:`~videoatlas.persistence.patience.db_patience`; see :mod:`.pg_saver`). A SQLite
    file has no connection to lose.
    """
    if is_sqlite(url):
        import aiosqlite

        from videoatlas.persistence.sqlite_saver import WholeWriteSqliteSaver

        path = str(Path(sqlite_path(url)).resolve())
        registry = _registry()
        async with registry.lock:
            if path in registry.entries:
                conn, saver, users = registry.entries[path]
            else:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                conn = await aiosqlite.connect(path, timeout=60)
                # WAL lets readers run beside the writer; the busy timeout makes other processes
                # wait for the lock instead of failing.
                await conn.execute("PRAGMA busy_timeout=60000")
                await conn.execute("PRAGMA journal_mode=WAL")
                # NORMAL in WAL mode: every commit survives the process being killed (the OS holds
                # it); only a power cut could lose the last few. No fsync per checkpoint write.
                await conn.execute("PRAGMA synchronous=NORMAL")
                saver = WholeWriteSqliteSaver(conn, serde=serializer())
                await saver.setup()
                users = 0
            registry.entries[path] = (conn, saver, users + 1)
        try:
            yield saver
        finally:
            async with registry.lock:
                conn, saver, users = registry.entries[path]
                if users <= 1:
                    del registry.entries[path]
                    await saver.aclose()
                else:
                    registry.entries[path] = (conn, saver, users - 1)
        return
    from psycopg import OperationalError

    from videoatlas.persistence.pg_saver import PatientPostgresSaver, connect

    patience = db_patience() if patience_s is None else patience_s
    conninfo = libpq_url(url)
    try:
        if was_reached(url):
            pg_conn = await retry_async(lambda: connect(conninfo), "checkpoints", patience)
        else:
            pg_conn = await connect(conninfo)
    except OperationalError as exc:
        raise BadInputError(f"cannot connect to {redact_url(url)}: {str(exc).strip().splitlines()[0]}") from None
    mark_reached(url)
    pg_saver = PatientPostgresSaver(pg_conn, conninfo, patience, serializer())
    try:
        if url not in _pg_ready:
            await _setup_once(pg_conn, pg_saver)
            _pg_ready.add(url)
        yield pg_saver
    finally:
        await pg_saver.aclose()
