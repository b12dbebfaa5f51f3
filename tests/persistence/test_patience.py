"""Database patience without a database: which errors are waited out, for how long, and what is done between tries."""

from __future__ import annotations

import psycopg
import pytest

from videoatlas.errors import DatabaseDownError
from videoatlas.persistence.patience import retry_async, retry_sync

pytestmark = pytest.mark.unit


class Flaky:
    """Fails ``losses`` times with a lost connection, then answers."""

    def __init__(self, losses: int, error: Exception | None = None) -> None:
        self.losses = losses
        self.error = error or psycopg.OperationalError("connection refused")
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.losses:
            raise self.error
        return "written"


def test_a_lost_connection_is_tried_again_after_dropping_the_dead_ones() -> None:
    work = Flaky(2)
    dropped: list[int] = []
    pauses: list[float] = []
    result = retry_sync(work, "run store", patience_s=60, on_lost=lambda: dropped.append(1), sleep=pauses.append)
    assert result == "written" and work.calls == 3
    assert len(dropped) == 2 and len(pauses) == 2 and all(0 < p <= 60 for p in pauses)


def test_an_error_that_is_not_a_lost_connection_is_raised_at_once() -> None:
    work = Flaky(1, ValueError("constraint"))
    with pytest.raises(ValueError, match="constraint"):
        retry_sync(work, "run store", patience_s=60, sleep=lambda _: None)
    assert work.calls == 1


def test_past_the_patience_the_database_is_down() -> None:
    with pytest.raises(DatabaseDownError, match=r"run store.*within 0 s: connection refused"):
        retry_sync(Flaky(5), "run store", patience_s=0, sleep=lambda _: None)


async def test_the_async_retry_reconnects_and_goes_on() -> None:
    work = Flaky(1)
    reconnects: list[int] = []

    async def call() -> str:
        return work()

    async def reconnect() -> None:
        reconnects.append(1)

    assert await retry_async(call, "checkpointer", patience_s=60, on_lost=reconnect) == "written"
    assert work.calls == 2 and reconnects == [1]
