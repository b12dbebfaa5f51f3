"""Database patience: a lost connection is retried on a fresh one, with backoff, for a bounded time.

A PostgreSQL server that restarts or fails over, or an administrator's ``pg_terminate_backend``,
cuts every connection: the statement in flight fails, and so does every new connection until the
server is back. Each write of the run store and of the checkpointer is one transaction, so a write
cut in the middle left nothing, and doing it again on a new connection is safe (the checkpointer's
writes are upserts). Past the patience, :class:`~videoatlas.errors.DatabaseDownError`: the run stops
as interrupted, resumable once the database is back.

What counts as a lost connection: SQLAlchemy's own verdict (``connection_invalidated``), a psycopg
error raised before any server answer (connection refused, connection closed), and the server's
connection-exception and shutdown codes (SQLSTATE class 08; 57P01-57P03). Anything else (a
constraint, a syntax error, SQLite's lock) is not an outage and is raised as it is.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import structlog
from sqlalchemy.exc import DBAPIError

from videoatlas.errors import BadInputError, DatabaseDownError

log = structlog.get_logger(__name__)

T = TypeVar("T")

PATIENCE_ENV = "VIDEOATLAS_DB_PATIENCE"
DEFAULT_DB_PATIENCE_S = 300.0
"""As long as the endpoint's patience by default (five minutes): a PostgreSQL restart or failover fits in it."""
BACKOFF_S = 0.25
BACKOFF_CAP_S = 5.0
_SHUTDOWN_STATES = {"57P01", "57P02", "57P03"}  # admin shutdown, crash shutdown, cannot connect now


_reached: set[str] = set()


def mark_reached(url: str) -> None:
    """The database at ``url`` answered in this process: from now on, losing it is waited out."""
    _reached.add(url)


def was_reached(url: str) -> bool:
    """Whether the database at ``url`` answered in this process (one that never did is a bad ``--db``: no wait)."""
    return url in _reached


def db_patience(env: dict[str, str] | None = None) -> float:
    """Seconds a lost database is waited for when no run gave its own (five minutes by default).

    ``VIDEOATLAS_DB_PATIENCE``, else ``VIDEOATLAS_ENDPOINT_PATIENCE``: one setting bounds both waits
    unless the database's is given apart. Runs pass their endpoint's patience (``--endpoint-patience``).
    """
    source = os.environ if env is None else env
    for name in (PATIENCE_ENV, "VIDEOATLAS_ENDPOINT_PATIENCE"):
        text = source.get(name, "").strip()
        if not text:
            continue
        try:
            value = float(text)
        except ValueError:
            raise BadInputError(f"{name} must be a number of seconds, got {text!r}") from None
        if not 0 <= value < float("inf"):
            raise BadInputError(f"{name} must be 0 or more seconds, got {text!r}")
        return value
    return DEFAULT_DB_PATIENCE_S


def is_connection_loss(exc: BaseException) -> bool:
    """Whether ``exc`` says the database connection went away (see the module's docstring)."""
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        exc = exc.orig if exc.orig is not None else exc
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency; SQLite-only installs never lose one
        return False
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = getattr(exc, "sqlstate", None)
    return state is None or state.startswith("08") or state in _SHUTDOWN_STATES


def _pause(step: int, rng: random.Random) -> float:
    return rng.uniform(0.5, 1.0) * float(min(BACKOFF_CAP_S, BACKOFF_S * 2 ** (step - 1)))


def _down(what: str, patience_s: float, exc: BaseException) -> DatabaseDownError:
    reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    first = reason[0] if reason else type(exc).__name__
    return DatabaseDownError(f"the database ({what}) was lost and did not come back within {patience_s:g} s: {first}")


class _Outage:
    """One retried call's bookkeeping: when the connection was first lost, and how long to pause next."""

    def __init__(self, what: str, patience_s: float | None) -> None:
        self.what = what
        self.patience = db_patience() if patience_s is None else patience_s
        self.began: float | None = None
        self.step = 0
        self.rng = random.Random()

    def pause_after(self, exc: Exception) -> float:
        """Seconds to wait before the next try after ``exc``; raised again when it is no lost connection.

        Past the patience, :class:`~videoatlas.errors.DatabaseDownError`.
        """
        if not is_connection_loss(exc):
            raise exc
        now = time.monotonic()
        self.began = now if self.began is None else self.began
        if now - self.began >= self.patience:
            raise _down(self.what, self.patience, exc) from None
        if self.step == 0:
            log.warning("database_connection_lost", what=self.what, error=str(exc).strip().splitlines()[0][:200])
        self.step += 1
        return min(_pause(self.step, self.rng), max(0.0, self.began + self.patience - now))

    def over(self) -> None:
        """The call went through: say so when it had lost its connection."""
        if self.step:
            log.warning("database_back", what=self.what, down_s=round(time.monotonic() - (self.began or 0.0), 1))


def retry_sync(
    work: Callable[[], T],
    what: str,
    patience_s: float | None = None,
    on_lost: Callable[[], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``work()``, done again after a lost connection (``on_lost`` first: drop the dead connections)."""
    outage = _Outage(what, patience_s)
    while True:
        try:
            result = work()
        except Exception as exc:
            pause = outage.pause_after(exc)
            if on_lost is not None:
                on_lost()
            sleep(pause)
            continue
        outage.over()
        return result


async def retry_async(
    work: Callable[[], Awaitable[T]],
    what: str,
    patience_s: float | None = None,
    on_lost: Callable[[], Awaitable[None]] | None = None,
) -> T:
    """:func:`retry_sync` for a coroutine: ``await work()``, again on a fresh connection after a lost one."""
    outage = _Outage(what, patience_s)
    while True:
        try:
            result = await work()
        except Exception as exc:
            await asyncio.sleep(outage.pause_after(exc))
            if on_lost is not None:
                try:
                    await on_lost()
                except Exception as again:
                    if not is_connection_loss(again):
                        raise
            continue
        outage.over()
        return result
