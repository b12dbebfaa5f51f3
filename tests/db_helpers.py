"""The PostgreSQL server the postgres-marked tests use (CI and this machine kind run one)."""

from __future__ import annotations

import os
import socket

PG_URL = os.environ.get("VIDEOATLAS_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def pg_available() -> bool:
    """Whether something listens on PostgreSQL's port."""
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False
