"""LangGraph's SQLite checkpointer, with a cancelled write rolled back instead of left open.

Every run in a process shares one SQLite connection for its checkpoints (see
:mod:`videoatlas.persistence.checkpoint`). LangGraph's saver runs a write's INSERT and then awaits
its COMMIT; a run cancelled between the two (a stop signal, a client that hangs up) would leave
that transaction open, holding the file's write lock: the run's closing status write, made through
another connection, then waited out the busy timeout and failed. Here a write that does not finish
is rolled back, under the saver's lock so that no other run's write is in the middle of it.

The connection is closed the same way (:meth:`WholeWriteSqliteSaver.aclose`): under the lock, after a
rollback. Closed in the middle of a write, it would stay open inside SQLite, its transaction and the
file's write lock with it, for as long as a statement of it was not finalized: the cursor of an
``executemany`` (every ``aput_writes``) keeps its statement, and the cursor lives as long as anything
holds the cancelled write's frames (an exception's traceback). Every other connection to the file
then waited out its busy timeout ("database is locked").
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver


class WholeWriteSqliteSaver(AsyncSqliteSaver):
    """An :class:`AsyncSqliteSaver` whose writes either commit or leave nothing behind."""

    closed = False
    """Set by :meth:`aclose`: the connection is gone, and no transaction was left on it."""

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Save a checkpoint; one not saved leaves no open transaction."""
        try:
            return await super().aput(config, checkpoint, metadata, new_versions)
        except BaseException:
            await self._undo()
            raise

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Save a task's writes, all or none."""
        try:
            await super().aput_writes(config, writes, task_id, task_path)
        except BaseException:
            await self._undo()
            raise

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete a thread's checkpoints and writes, all or none."""
        try:
            await super().adelete_thread(thread_id)
        except BaseException:
            await self._undo()
            raise

    async def _undo(self) -> None:
        """Roll back the transaction a failed or cancelled write left open (if it did).

        The rollback is queued on the connection's thread behind whatever the write had queued there:
        a write cancelled before that thread ran its INSERT still runs it afterwards, so whether a
        transaction is open cannot be known here beforehand. Rolling back with none open does nothing.
        Shielded: a second cancel while it waits for the lock does not stop the rollback. A
        connection already closed was rolled back by :meth:`aclose`, which queued its rollback behind
        this write's statements.
        """

        async def roll_back() -> None:
            async with self.lock:
                if not self.closed:
                    await self.conn.rollback()

        await asyncio.shield(roll_back())

    async def aclose(self) -> None:
        """Close the connection once no write is half done, rolling back what a cancelled one left.

        Shielded like :meth:`_undo`: a cancel while it waits for the lock does not leave the
        connection open.
        """

        async def close() -> None:
            async with self.lock:
                if self.closed:
                    return
                self.closed = True
                await self.conn.rollback()
                await self.conn.close()

        await asyncio.shield(close())
