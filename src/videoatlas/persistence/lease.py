"""One owner per run: a lease in the trace database, held by the process that runs the run.

A process that runs a run (``ask``, ``resume``, ``eval run``) first claims the run's lease: a row
of ``va_leases`` naming an owner id, the host and the pid, with a heartbeat the owner renews every
few seconds from a thread. A claim succeeds when the run has no lease, or its lease is *stale*
(no heartbeat for longer than the timeout: the owner was killed, or lost with its node; or at
once, when the owner was a process on this host that no longer exists), or with ``force``. The
claim is one transaction (an INSERT that does nothing on conflict, then an UPDATE
conditioned on the owner that was read, under ``BEGIN IMMEDIATE`` on SQLite and ``FOR UPDATE`` on
PostgreSQL), so of two processes racing for a run exactly one wins.

Times are the database's clock (seconds since the epoch), so hosts with skewed clocks that share
one PostgreSQL server still agree on a lease's age.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from sqlalchemy import Float, Integer, String, and_, delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.functions import FunctionElement

from videoatlas.errors import BadInputError, RunOwnedError
from videoatlas.persistence.tables import RunRow

log = structlog.get_logger(__name__)

HEARTBEAT_ENV = "VIDEOATLAS_LEASE_HEARTBEAT"
TIMEOUT_ENV = "VIDEOATLAS_LEASE_TIMEOUT"
DEFAULT_HEARTBEAT_S = 5.0
DEFAULT_TIMEOUT_S = 30.0


class LeaseBase(DeclarativeBase):
    """The lease table (its own metadata: the trace store creates it beside its tables)."""


class LeaseRow(LeaseBase):
    """Who runs a run now, and when it last said so."""

    __tablename__ = "va_leases"
    run_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner: Mapped[str] = mapped_column(String(32))
    """Random id of one claim (a process that claims two runs holds two ids)."""
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    acquired_at: Mapped[float] = mapped_column(Float)
    heartbeat_at: Mapped[float] = mapped_column(Float)
    """Seconds since the epoch, by the database's clock."""


class db_now(FunctionElement[float]):
    """The database's clock in seconds since the epoch (a float with sub-second precision)."""

    type = Float()
    inherit_cache = True


@compiles(db_now, "sqlite")
def _sqlite_now(element: db_now, compiler: SQLCompiler, **kw: Any) -> str:
    return "((julianday('now') - 2440587.5) * 86400.0)"


@compiles(db_now, "postgresql")
def _pg_now(element: db_now, compiler: SQLCompiler, **kw: Any) -> str:
    return "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)"


@dataclass(frozen=True, slots=True)
class LeaseTiming:
    """How often an owner renews its lease, and after how long without renewal a lease is stale."""

    heartbeat_s: float = DEFAULT_HEARTBEAT_S
    timeout_s: float = DEFAULT_TIMEOUT_S

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> LeaseTiming:
        """From ``VIDEOATLAS_LEASE_HEARTBEAT`` and ``VIDEOATLAS_LEASE_TIMEOUT`` (seconds; defaults 5 and 30)."""
        env = os.environ if env is None else env
        heartbeat = _seconds(env, HEARTBEAT_ENV, DEFAULT_HEARTBEAT_S)
        timeout = _seconds(env, TIMEOUT_ENV, DEFAULT_TIMEOUT_S)
        if timeout < 2 * heartbeat:
            raise BadInputError(
                f"{TIMEOUT_ENV} ({timeout:g} s) must be at least twice {HEARTBEAT_ENV} ({heartbeat:g} s): "
                "a live owner would look stale between two heartbeats"
            )
        return cls(heartbeat, timeout)


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise BadInputError(f"{name} must be a number of seconds, got {text!r}") from None
    if not value > 0:
        raise BadInputError(f"{name} must be more than 0 seconds, got {text!r}")
    return value


@dataclass(frozen=True, slots=True)
class Holder:
    """A run's lease as another process sees it."""

    owner: str
    host: str
    pid: int
    age_s: float
    """Seconds since its last heartbeat."""
    stale: bool

    def describe(self) -> str:
        """``owner 3f2a... (host node17, pid 4242), last heartbeat 2 s ago``."""
        return f"owner {self.owner} (host {self.host}, pid {self.pid}), last heartbeat {self.age_s:.0f} s ago"


def _holder(row: Any, now: float, timing: LeaseTiming) -> Holder:
    """The lease ``row`` as seen at ``now``: stale after the timeout, or at once when its owner is known dead."""
    age = now - row.heartbeat_at
    return Holder(row.owner, row.host, row.pid, age, age > timing.timeout_s or _owner_gone(row.host, row.pid))


def _owner_gone(host: str, pid: int) -> bool:
    """Whether the owner was a process on this host that no longer exists (a kill -9, a crash).

    Only a pid of this host can be checked; another host's owner counts as gone when its heartbeat
    stops. A reused pid looks alive, which only means waiting for the timeout as before.
    """
    if host != socket.gethostname()[:255] or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # someone else's process: alive
        return False
    return False


def effective_status(status: str, holder: Holder | None) -> str:
    """A run's status as shown: a ``running`` run whose owner is gone (no lease, or a stale one) is ``stale``.

    The one definition of ``stale``: the CLI's table and the UI show it, :func:`status_where` filters
    on it in SQL, and :func:`claim` takes over a lease exactly when its holder is stale.
    """
    if status == "running" and (holder is None or holder.stale):
        return "stale"
    return status


def status_where(shown: str, live: Collection[str]) -> ColumnElement[bool]:
    """:func:`effective_status` as a WHERE clause on ``va_runs``: the runs whose shown status is ``shown``.

    ``live``: the runs whose owner is alive (:func:`live_holders`, read just before), so a page
    of runs is filtered, counted and cut in SQL by the rule its rows are shown by.
    """
    if shown == "stale":
        return and_(RunRow.status == "running", RunRow.id.not_in(list(live)))
    if shown == "running":
        return and_(RunRow.status == "running", RunRow.id.in_(list(live)))
    return RunRow.status == shown


def _insert(conn: Connection) -> Any:
    return (pg_insert if conn.dialect.name == "postgresql" else sqlite_insert)(LeaseRow)


def claim(conn: Connection, run_id: str, timing: LeaseTiming, *, force: bool = False) -> str:
    """Take ``run_id``'s lease inside the caller's transaction; returns the new owner id.

    Raises :class:`RunOwnedError` naming the owner when the lease is held by a live owner (and
    ``force`` is not given), or when another process took it between our read and our write.
    """
    owner = uuid.uuid4().hex[:12]
    mine = {"owner": owner, "host": socket.gethostname()[:255], "pid": os.getpid()}
    fresh = _insert(conn).values(run_id=run_id, acquired_at=db_now(), heartbeat_at=db_now(), **mine)
    # RETURNING, not rowcount: the psycopg dialect reports no row count for INSERT ... ON CONFLICT.
    if conn.execute(fresh.on_conflict_do_nothing().returning(LeaseRow.run_id)).first() is not None:
        return owner
    # The row exists: lock it (PostgreSQL; SQLite's BEGIN IMMEDIATE already serialises writers),
    # then read the clock, so the age is measured against the latest heartbeat.
    row = conn.execute(select(LeaseRow.__table__).where(LeaseRow.run_id == run_id).with_for_update()).one()
    now = float(conn.execute(select(db_now())).scalar_one())
    holder = _holder(row, now, timing)
    if not holder.stale and not force:
        raise RunOwnedError(
            f"run {run_id} is being run by {holder.describe()}; it counts as stopped after "
            f"{timing.timeout_s:g} s without a heartbeat, or take it over with --force"
        )
    took = conn.execute(
        update(LeaseRow)
        .where(LeaseRow.run_id == run_id, LeaseRow.owner == row.owner)
        .values(acquired_at=db_now(), heartbeat_at=db_now(), **mine)
        .returning(LeaseRow.run_id)
    )
    if took.first() is None:
        raise RunOwnedError(f"run {run_id} was just taken over by another process")
    if force and not holder.stale:
        log.warning("lease_forced", run_id=run_id, previous=holder.describe())
    return owner


def release(conn: Connection, run_id: str, owner: str) -> bool:
    """Give the lease back inside the caller's transaction; False: it was no longer ours."""
    gone = conn.execute(
        delete(LeaseRow).where(LeaseRow.run_id == run_id, LeaseRow.owner == owner).returning(LeaseRow.run_id)
    )
    return gone.first() is not None


def renew(engine: Engine, run_id: str, owner: str) -> bool:
    """One heartbeat; False: another process holds the lease now."""
    with engine.begin() as conn:
        done = conn.execute(
            update(LeaseRow)
            .where(LeaseRow.run_id == run_id, LeaseRow.owner == owner)
            .values(heartbeat_at=db_now())
            .returning(LeaseRow.run_id)
        )
        return done.first() is not None


def holders(engine: Engine, run_ids: Sequence[str], timing: LeaseTiming) -> dict[str, Holder]:
    """The leases of ``run_ids`` (a run without one is missing from the result)."""
    if not run_ids:
        return {}
    with engine.connect() as conn:
        return holders_in(conn, run_ids, timing)


def holders_in(conn: Connection, run_ids: Sequence[str], timing: LeaseTiming) -> dict[str, Holder]:
    """:func:`holders`, read on the caller's connection."""
    if not run_ids:
        return {}
    now = float(conn.execute(select(db_now())).scalar_one())
    found = conn.execute(select(LeaseRow.__table__).where(LeaseRow.run_id.in_(list(run_ids))))
    return {r.run_id: _holder(r, now, timing) for r in found}


def live_holders(conn: Connection, timing: LeaseTiming) -> dict[str, Holder]:
    """The leases whose owner is alive now, by run id: the runs shown as ``running``.

    Only leases renewed within the timeout are read (few: one per run in progress); each is then
    judged like any other, so an owner on this host that died counts as gone at once here too.
    """
    now = float(conn.execute(select(db_now())).scalar_one())
    fresh = conn.execute(select(LeaseRow.__table__).where(LeaseRow.heartbeat_at >= now - timing.timeout_s))
    return {r.run_id: held for r in fresh if not (held := _holder(r, now, timing)).stale}


class Heartbeat:
    """Renews one lease from a thread (the event loop may be busy) until stopped.

    When a renewal finds the lease held by another process (taken over with ``--force``, or
    because this one looked stale), ``lost`` is set, the callback given to :meth:`watch` is called
    once (from the thread) and beating stops. A database error is logged; the next beat tries again.
    """

    def __init__(self, engine: Engine, run_id: str, owner: str, timing: LeaseTiming) -> None:
        self.engine = engine
        self.run_id = run_id
        self.owner = owner
        self.timing = timing
        self.lost = False
        self._on_lost: Callable[[], None] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"videoatlas-lease-{run_id}", daemon=True)
        self._thread.start()

    def watch(self, on_lost: Callable[[], None]) -> None:
        """Call ``on_lost`` once when the lease is lost (at once if it already was)."""
        with self._lock:
            self._on_lost = on_lost
            lost = self.lost
        if lost:
            on_lost()

    def _beat(self) -> None:
        while not self._stop.wait(self.timing.heartbeat_s):
            try:
                held = renew(self.engine, self.run_id, self.owner)
            except SQLAlchemyError as exc:
                log.warning("lease_heartbeat_failed", run_id=self.run_id, error=str(exc).splitlines()[0])
                continue
            if held:
                continue
            if not self._stop.is_set():
                log.warning("lease_lost", run_id=self.run_id)
                with self._lock:
                    self.lost = True
                    on_lost = self._on_lost
                if on_lost is not None:
                    on_lost()
            return

    def stop(self) -> None:
        """Stop beating (the lease itself is given back by :func:`release`).

        Not joined: a beat waiting for a busy database must not block the caller (the event loop);
        a beat that lands after the lease was given back changes nothing and reports nothing.
        """
        self._stop.set()
