"""LangGraph's SQLite checkpointer, with a cancelled write rolled back instead of left open.

Every run in a process shares one SQLite connection for its checkpoints (see
:mod:`videoatlas.persistence.checkpoint`). LangGraph's saver runs a write's INSERT and then awaits
its COMMIT; a run cancelled between the two (a stop signal, a client that hangs up) would leave
that transaction open, holding the file's write lock: the run's closing status write, made through
another connection, then waited out the busy timeout and failed. Here a write that does not finish
is rolled back, under the saver's lock so that no other run's write is in the middle of it.
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
        Shielded: a second cancel while it waits for the lock does not stop the rollback.
        """

        async def roll_back() -> None:
            async with self.lock:
                await self.conn.rollback()

        await asyncio.shield(roll_back())
