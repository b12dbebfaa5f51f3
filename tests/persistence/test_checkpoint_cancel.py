"""A checkpoint write cancelled half-way leaves no transaction open on the shared SQLite connection.

Every run in a process shares one SQLite connection for its checkpoints. A run cancelled (SIGTERM,
a client hanging up) between a write's INSERT and its COMMIT used to leave that transaction open:
the file stayed locked, and the run's own closing write (its status, through another connection)
waited out the busy timeout and failed ("database is locked"), leaving the run unsettled.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import create_engine, text

from db_helpers import sqlite_url
from videoatlas.persistence.checkpoint import open_checkpointer

pytestmark = pytest.mark.unit


def _writer_can_write(path: Path) -> bool:
    """Whether another connection gets the write lock within half a second."""
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": 0.5})
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            conn.execute(text("CREATE TABLE IF NOT EXISTS probe (x INTEGER)"))
            conn.exec_driver_sql("COMMIT")
        return True
    except Exception as exc:
        assert "database is locked" in str(exc), exc
        return False
    finally:
        engine.dispose()


@pytest.mark.parametrize("write", ["aput", "aput_writes"])
async def test_a_write_cancelled_before_its_commit_is_rolled_back(write: str, tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    async with open_checkpointer(sqlite_url(path)) as saver:
        conn: Any = saver.conn  # type: ignore[attr-defined]
        real_commit = conn.commit
        committing = asyncio.Event()

        async def stalled_commit() -> None:  # the cancel lands while the COMMIT is awaited
            committing.set()
            await asyncio.Event().wait()
            await real_commit()

        conn.commit = stalled_commit
        config: dict[str, Any] = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c1"}}
        if write == "aput":
            task = asyncio.ensure_future(saver.aput(config, empty_checkpoint(), {}, {}))  # type: ignore[arg-type]
        else:
            task = asyncio.ensure_future(saver.aput_writes(config, [("x", 1)], "task-1"))  # type: ignore[arg-type]
        await asyncio.wait_for(committing.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        conn.commit = real_commit
        assert not conn.in_transaction
        assert await asyncio.to_thread(_writer_can_write, path)
        # The connection goes on serving later writes, which are kept.
        await saver.aput_writes(config, [("y", 2)], "task-2")  # type: ignore[arg-type]
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM checkpoints").fetchone() == (0,)  # the cancelled aput
        assert db.execute("SELECT task_id FROM writes").fetchall() == [("task-2",)]


@pytest.mark.parametrize("write", ["aput", "aput_writes"])
async def test_a_write_cancelled_while_its_insert_waits_on_the_connection_thread_is_rolled_back(
    write: str, tmp_path: Path
) -> None:
    """The cancel lands before the connection's thread has run the INSERT: it runs afterwards, and is undone."""
    path = tmp_path / "runs.db"
    async with open_checkpointer(sqlite_url(path)) as saver:
        conn: Any = saver.conn  # type: ignore[attr-defined]
        # The connection's one thread is held in a query until released, so the write's INSERT waits behind it.
        release = threading.Event()
        await conn.create_function("held_here", 0, lambda: release.wait(30))
        busy = asyncio.ensure_future(conn.execute("SELECT held_here()"))
        await asyncio.sleep(0.05)
        config: dict[str, Any] = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c1"}}
        if write == "aput":
            task = asyncio.ensure_future(saver.aput(config, empty_checkpoint(), {}, {}))  # type: ignore[arg-type]
        else:
            task = asyncio.ensure_future(saver.aput_writes(config, [("x", 1)], "task-1"))  # type: ignore[arg-type]
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.sleep(0.05)  # the cancel is delivered while the INSERT still waits on the thread
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        await busy
        await conn.execute("SELECT 1")  # everything queued before this has run on the connection's thread
        assert not conn.in_transaction
        assert await asyncio.to_thread(_writer_can_write, path)
        await saver.aput_writes(config, [("y", 2)], "task-2")  # type: ignore[arg-type]
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM checkpoints").fetchone() == (0,)
        assert db.execute("SELECT task_id FROM writes").fetchall() == [("task-2",)]


@pytest.mark.parametrize("write", ["aput", "aput_writes"])
async def test_closing_the_checkpointer_waits_for_a_write_in_flight(write: str, tmp_path: Path) -> None:
    """The last run to leave closes the connection only once no write is half done.

    A connection closed between a write's INSERT and its COMMIT stays open inside SQLite, its
    transaction and write lock too, for as long as a statement of it is not finalized: a cursor of
    ``executemany`` (``aput_writes``) keeps its statement, and the cursor lives as long as anything
    holds the write's frames. Every other connection to the file then waits out its busy timeout
    ("database is locked").
    """
    path = tmp_path / "runs.db"
    go_on = asyncio.Event()
    config: dict[str, Any] = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "c1"}}
    async with open_checkpointer(sqlite_url(path)) as saver:
        conn: Any = saver.conn  # type: ignore[attr-defined]
        real_commit = conn.commit
        committing = asyncio.Event()

        async def slow_commit() -> None:
            committing.set()
            await go_on.wait()
            await real_commit()

        conn.commit = slow_commit
        if write == "aput":
            task = asyncio.ensure_future(saver.aput(config, empty_checkpoint(), {}, {}))  # type: ignore[arg-type]
        else:
            task = asyncio.ensure_future(saver.aput_writes(config, [("x", 1)], "task-1"))  # type: ignore[arg-type]
        await asyncio.wait_for(committing.wait(), 10)
        asyncio.get_running_loop().call_later(0.2, go_on.set)
    # The task, and with it the write's frames and cursor, is still held here.
    assert await asyncio.to_thread(_writer_can_write, path)
    await task  # the write finished before the connection closed, and was kept
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM checkpoints").fetchone() == (int(write == "aput"),)
        assert db.execute("SELECT count(*) FROM writes").fetchone() == (int(write == "aput_writes"),)
