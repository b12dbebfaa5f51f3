"""Reading a run back never holds up the event loop: its trace tables are read in a thread.

A server (MCP, the Agent Server) runs questions and answers ``trace`` in one process. A run's
checkpoint write holds the SQLite file's write lock between its INSERT and its COMMIT, and only the
event loop can send that COMMIT. A trace read that waited for the lock on the loop itself would wait
for a commit that cannot come: both stood still until the busy timeout (60 s) and the read failed
with "database is locked".
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiosqlite
import pytest

from db_helpers import run_row, sqlite_url
from videoatlas.inspect import load_trace
from videoatlas.persistence.store import TraceStore

pytestmark = pytest.mark.unit


def _stored_run(url: str) -> None:
    store = TraceStore(url)
    try:
        row = run_row("r-lock", question="Which word is shown?", choices=["HERON", "FALCON"], answer="HERON")
        store.start_run(row)
    finally:
        store.close()


async def test_a_trace_is_read_while_this_loop_holds_the_write_lock_until_it_commits(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    url = sqlite_url(path)
    _stored_run(url)
    writer = await aiosqlite.connect(path, isolation_level=None)
    try:
        # As a run's checkpoint write does: the lock is taken here, and only this loop can commit.
        await writer.execute("BEGIN IMMEDIATE")
        await writer.execute("CREATE TABLE held (x INTEGER)")
        reading = asyncio.create_task(load_trace("r-lock", url))
        await asyncio.sleep(0.5)  # the read starts and waits for the lock (in its thread, not on the loop)
        assert not reading.done()
        await writer.execute("COMMIT")
        trace = await asyncio.wait_for(reading, 30)
    finally:
        await writer.close()
    assert trace["run"]["id"] == "r-lock"
    assert trace["run"]["answer"] == "HERON"
    assert trace["run"]["choices"] == ["HERON", "FALCON"]
    assert trace["run"]["question"] == "Which word is shown?"
    assert trace["agent"] == "uniform"
    assert trace["calls"] == [] and trace["evidence"] == []
