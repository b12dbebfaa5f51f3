"""Database URLs: ``--db`` or ``VIDEOATLAS_DB``, else a SQLite file in the data directory."""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

from videoatlas.errors import BadInputError
from videoatlas.paths import home_dir


def resolve_db_url(explicit: str | None = None) -> str:
    """The database every run and trace goes to."""
    url = explicit or os.environ.get("VIDEOATLAS_DB")
    if not url:
        home = home_dir()
        home.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{home / 'videoatlas.db'}"
    if not url.startswith(("sqlite:///", "postgresql://", "postgresql+psycopg://", "postgres://")):
        raise BadInputError(f"unsupported database URL {redact_url(url)!r}: use sqlite:///PATH or postgresql://...")
    return url


def is_sqlite(url: str) -> bool:
    """Whether the URL names a SQLite file."""
    return url.startswith("sqlite:///")


def sqlite_path(url: str) -> str:
    """The file of a ``sqlite:///`` URL."""
    return url[len("sqlite:///") :]


def libpq_url(url: str) -> str:
    """A PostgreSQL URL as psycopg expects it (no SQLAlchemy driver suffix)."""
    for prefix in ("postgresql+psycopg://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix) :]
    return url


def sqlalchemy_url(url: str) -> str:
    """A URL for SQLAlchemy (psycopg 3 driver for PostgreSQL)."""
    if is_sqlite(url):
        return url
    return "postgresql+psycopg://" + libpq_url(url)[len("postgresql://") :]


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***`` (for logs, errors and reports)."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return url
