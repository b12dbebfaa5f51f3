"""One owner per run: leases on real SQLite and PostgreSQL, racing claims, a run that loses its lease."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from sqlalchemy import update

from agent_helpers import ScriptedChat, default_reply
from db_helpers import rows
from videoatlas.errors import BadInputError, RunOwnedError
from videoatlas.llm.settings import EndpointSettings
from videoatlas.persistence.lease import LeaseRow, LeaseTiming, claim, effective_status, renew
from videoatlas.persistence.store import TraceStore, make_engine
from videoatlas.runs import run_question
from videoatlas.runtime.context import RunConfig

TIMING = LeaseTiming(heartbeat_s=0.2, timeout_s=2.0)


def _age(store: TraceStore, run_id: str, seconds: float) -> None:
    """Make the run's last heartbeat ``seconds`` older, as if its owner had gone silent that long."""
    with store.engine.begin() as conn:
        conn.execute(
            update(LeaseRow).where(LeaseRow.run_id == run_id).values(heartbeat_at=LeaseRow.heartbeat_at - seconds)
        )


@pytest.fixture
def store(db_url: str) -> TraceStore:
    return TraceStore(db_url)


def test_a_live_lease_is_refused_a_stale_one_taken_over_and_force_takes_any(store: TraceStore) -> None:
    run_id = f"lease-{uuid.uuid4().hex[:8]}"
    try:
        first = store.claim_run(run_id, TIMING)
        with pytest.raises(RunOwnedError, match=rf"is being run by owner {first} \(host .+, pid \d+\)"):
            store.claim_run(run_id, TIMING)
        assert renew(store.engine, run_id, first)

        _age(store, run_id, 60)
        holder = store.holders([run_id], TIMING)[run_id]
        assert holder.stale and holder.owner == first and effective_status("running", holder) == "stale"
        second = store.claim_run(run_id, TIMING)
        assert second != first and not renew(store.engine, run_id, first)  # the old owner learns it lost
        assert effective_status("running", store.holders([run_id], TIMING)[run_id]) == "running"

        third = store.claim_run(run_id, TIMING, force=True)  # live, but forced
        assert not renew(store.engine, run_id, second) and renew(store.engine, run_id, third)
        assert not store.settle_run(run_id, second, status="finished")  # a former owner writes nothing
        assert store.settle_run(run_id, third) and store.holders([run_id], TIMING) == {}
    finally:
        store.close()


@pytest.mark.parametrize("start", ["no lease", "stale lease"])
def test_of_racing_claims_exactly_one_wins(db_url: str, store: TraceStore, start: str) -> None:
    run_id = f"race-{uuid.uuid4().hex[:8]}"
    if start == "stale lease":
        store.claim_run(run_id, TIMING)
        _age(store, run_id, 60)
    store.close()
    racers = 8
    engines = [make_engine(db_url) for _ in range(racers)]  # one connection each: real concurrent transactions
    gate = threading.Barrier(racers)
    won: list[str] = []
    refused: list[str] = []

    def race(n: int) -> None:
        gate.wait()
        try:
            with engines[n].begin() as conn:
                won.append(claim(conn, run_id, TIMING))
        except RunOwnedError as exc:
            refused.append(str(exc))

    threads = [threading.Thread(target=race, args=(n,)) for n in range(racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for engine in engines:
        engine.dispose()
    assert len(won) == 1 and len(refused) == racers - 1
    assert rows(db_url, "SELECT owner FROM va_leases WHERE run_id = :r", r=run_id) == [(won[0],)]
    assert all(run_id in message for message in refused)


CLAIMER = (
    "import os, sys\n"
    "from videoatlas.persistence.lease import LeaseTiming\n"
    "from videoatlas.persistence.store import TraceStore\n"
    "store = TraceStore(sys.argv[1])\n"
    "print(store.claim_run(sys.argv[2], LeaseTiming(heartbeat_s=1.0, timeout_s=600.0)), flush=True)\n"
    "sys.stdin.read()  # holds the lease until its stdin closes\n"
    "os._exit(0)  # gone without giving it back, like a kill -9\n"
)


def test_a_lease_whose_owner_on_this_host_died_is_taken_over_at_once(db_url: str, store: TraceStore) -> None:
    run_id = f"lease-{uuid.uuid4().hex[:8]}"
    slow = LeaseTiming(heartbeat_s=1.0, timeout_s=600.0)  # a heartbeat's silence would take ten minutes
    owner = subprocess.Popen(
        [sys.executable, "-c", CLAIMER, db_url, run_id], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None and owner.stdin is not None
        first = owner.stdout.readline().strip()
        with pytest.raises(RunOwnedError, match=f"pid {owner.pid}"):  # alive: refused
            store.claim_run(run_id, slow)
        owner.stdin.close()
        owner.wait(timeout=60)
        holder = store.holders([run_id], slow)[run_id]
        assert holder.owner == first and holder.pid == owner.pid and holder.age_s < 600
        assert holder.stale and effective_status("running", holder) == "stale"
        assert store.claim_run(run_id, slow) != first  # at once, not after the timeout
    finally:
        owner.kill()
        owner.wait(timeout=60)
        store.close()


@pytest.mark.unit
def test_lease_timing_comes_from_the_environment_and_is_checked() -> None:
    assert LeaseTiming.from_env({}) == LeaseTiming(5.0, 30.0)
    env = {"VIDEOATLAS_LEASE_HEARTBEAT": "0.5", "VIDEOATLAS_LEASE_TIMEOUT": "3"}
    assert LeaseTiming.from_env(env) == LeaseTiming(0.5, 3.0)
    with pytest.raises(BadInputError, match="at least twice"):
        LeaseTiming.from_env({"VIDEOATLAS_LEASE_HEARTBEAT": "5", "VIDEOATLAS_LEASE_TIMEOUT": "6"})
    with pytest.raises(BadInputError, match="number of seconds"):
        LeaseTiming.from_env({"VIDEOATLAS_LEASE_TIMEOUT": "soon"})


@pytest.mark.e2e
async def test_a_run_taken_over_by_force_stops_and_writes_nothing(
    db_url: str, counter_video: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VIDEOATLAS_LEASE_HEARTBEAT", "0.2")
    monkeypatch.setenv("VIDEOATLAS_LEASE_TIMEOUT", "2")
    run_id = f"taken-{uuid.uuid4().hex[:8]}"
    chat = ScriptedChat(script=default_reply, delay=lambda *_: 0.5)
    other = await asyncio.to_thread(TraceStore, db_url)  # another process's `resume --force`, in effect
    run = asyncio.create_task(
        run_question(
            counter_video,
            "What number is shown?",
            ["one", "two"],
            RunConfig.of(cell_px=64, workers=2, rounds=3),
            EndpointSettings(model="scripted"),
            chat_model=chat,
            db_url=db_url,
            run_id=run_id,
        )
    )
    try:
        while not rows(db_url, "SELECT 1 FROM va_model_calls WHERE run_id = :r", r=run_id):
            assert not run.done(), run
            await asyncio.sleep(0.05)
        taker = await asyncio.to_thread(other.claim_run, run_id, TIMING, force=True)
        with pytest.raises(RunOwnedError, match="taken over by another process"):
            await run
        assert rows(db_url, "SELECT status FROM va_runs WHERE id = :r", r=run_id) == [("running",)]
        assert rows(db_url, "SELECT owner FROM va_leases WHERE run_id = :r", r=run_id) == [(taker,)]
    finally:
        run.cancel()
        other.close()
