"""The databases tests run on: a SQLite file, or a fresh database on the PostgreSQL server CI and this machine run."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import create_engine, text

from videoatlas.persistence.db import sqlalchemy_url
from videoatlas.persistence.tables import RunRow

PG_URL = os.environ.get("VIDEOATLAS_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
"""The server's maintenance database; tests get databases of their own beside it (:func:`fresh_pg_database`)."""


def pg_available() -> bool:
    """Whether something listens on PostgreSQL's port."""
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


@contextmanager
def fresh_pg_database() -> Iterator[str]:
    """A new, empty database on the test server for one test, dropped after it: tests never see each other's runs."""
    name = f"va_test_{uuid.uuid4().hex[:16]}"
    base, _, _ = PG_URL.rpartition("/")
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # a name of our own making: hex digits only
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def rows(url: str, query: str, **params: Any) -> list[Any]:
    """The rows a query returns on the database at ``url`` (SQLite or PostgreSQL)."""
    engine = create_engine(sqlalchemy_url(url))
    try:
        with engine.connect() as conn:
            return list(conn.execute(text(query), params))
    finally:
        engine.dispose()


def sqlite_url(path: Path) -> str:
    """The URL of a SQLite file, for tests of one backend or e2e tests where the backend does not matter.

    Tests of the store itself take the ``db_url`` fixture (every backend); this is the one place a
    SQLite URL is spelled.
    """
    return f"sqlite:///{path}"


def run_row(run_id: str, **fields: Any) -> RunRow:
    """A run's row as the store keeps it: ``fields`` as given, placeholders for the columns a test does not set."""
    placeholders: dict[str, Any] = {
        "status": "finished",
        "agent": "uniform",
        "question": f"question of {run_id}",
        "choices": ["a", "b"],
        "video_path": "/videos/v.mp4",
        "video_identity": "x",
        "config": {},
        "endpoint": {},
        "prompt_set": "builtin:default",
        "prompt_sha": "0",
        "templates": {},
        "cost": {},
    }
    return RunRow(id=run_id, **{**placeholders, **fields})
