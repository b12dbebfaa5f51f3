"""Many processes opening one fresh PostgreSQL run store at once (the tasks of a Slurm array starting together)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from db_helpers import rows
from videoatlas.persistence.engine import open_engine

pytestmark = [pytest.mark.postgres, pytest.mark.e2e]


def test_openers_racing_on_a_fresh_database_all_get_its_tables(pg_url: str) -> None:
    openers = 8
    start = threading.Barrier(openers)

    def open_it(_: int) -> None:
        start.wait(30)
        open_engine(pg_url).dispose()  # made the tables, or found them made: never a duplicate-type error

    with ThreadPoolExecutor(openers) as pool:
        list(pool.map(open_it, range(openers)))
    tables = {name for (name,) in rows(pg_url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert {"va_runs", "va_model_calls", "va_node_events", "va_leases"} <= tables
