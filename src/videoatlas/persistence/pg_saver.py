"""LangGraph's PostgreSQL checkpointer, patient: a lost connection is replaced and the operation done again.

``AsyncPostgresSaver`` works on the one connection it is given (or a pool) and has no retry of its
own: after ``pg_terminate_backend`` or a server restart every later checkpoint write fails, and the
run with it. This saver reconnects (a new connection, the dead one closed) and repeats the
operation, with backoff, for its patience (:mod:`~videoatlas.persistence.patience`). Repeating is
safe: a checkpoint write is one pipeline (one implicit transaction) of upserts, and a task's writes
are inserts that do nothing (or the same update) when they are already there.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from psycopg import AsyncConnection
from psycopg.rows import DictRow, dict_row

from videoatlas.persistence.patience import retry_async

WHAT = "checkpoints"


async def connect(conninfo: str) -> AsyncConnection[DictRow]:
    """A connection as the saver needs it: autocommit, rows as dicts, no server-side prepared statements."""
    return await AsyncConnection.connect(conninfo, autocommit=True, prepare_threshold=0, row_factory=dict_row)


class PatientPostgresSaver(AsyncPostgresSaver):
    """:class:`AsyncPostgresSaver` that outlives its connection (see the module's docstring)."""

    def __init__(
        self, conn: AsyncConnection[DictRow], conninfo: str, patience_s: float, serde: SerializerProtocol
    ) -> None:
        super().__init__(conn, serde=serde)
        self.conninfo = conninfo
        self.patience_s = patience_s
        self.reconnects = 0

    async def _reconnect(self) -> None:
        old = self.conn
        if isinstance(old, AsyncConnection) and not (old.closed or old.broken):
            return  # the connection survived (the failure was a refused connect): nothing to replace
        self.conn = await connect(self.conninfo)
        self.reconnects += 1
        if isinstance(old, AsyncConnection):
            with contextlib.suppress(Exception):  # it is dead already; closing only frees it
                await old.close()

    async def aclose(self) -> None:
        """Close the current connection."""
        if isinstance(self.conn, AsyncConnection):
            await self.conn.close()

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """:meth:`AsyncPostgresSaver.aget_tuple`, patiently."""
        return await retry_async(
            lambda: AsyncPostgresSaver.aget_tuple(self, config), WHAT, self.patience_s, self._reconnect
        )

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """:meth:`AsyncPostgresSaver.alist`, patiently (read whole, then handed out)."""

        async def read() -> list[CheckpointTuple]:
            listed = AsyncPostgresSaver.alist(self, config, filter=filter, before=before, limit=limit)
            return [item async for item in listed]

        for item in await retry_async(read, WHAT, self.patience_s, self._reconnect):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """:meth:`AsyncPostgresSaver.aput`, patiently."""
        return await retry_async(
            lambda: AsyncPostgresSaver.aput(self, config, checkpoint, metadata, new_versions),
            WHAT,
            self.patience_s,
            self._reconnect,
        )

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """:meth:`AsyncPostgresSaver.aput_writes`, patiently."""
        await retry_async(
            lambda: AsyncPostgresSaver.aput_writes(self, config, writes, task_id, task_path),
            WHAT,
            self.patience_s,
            self._reconnect,
        )

    async def adelete_thread(self, thread_id: str) -> None:
        """:meth:`AsyncPostgresSaver.adelete_thread`, patiently."""
        await retry_async(
            lambda: AsyncPostgresSaver.adelete_thread(self, thread_id), WHAT, self.patience_s, self._reconnect
        )
