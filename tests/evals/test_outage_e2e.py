"""Outages mid-eval: the endpoint killed and restarted on its port, the database cut off; over real processes.

The eval runs as the ``videoatlas`` command; the stand-in as its own process (killed and started
again on the same port, as a restarted vLLM comes back); PostgreSQL on the test server, where the
eval's own database stops taking connections and loses the ones it had (``ALLOW_CONNECTIONS false``
and ``pg_terminate_backend``: the server itself is shared and stays up).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from db_helpers import PG_URL, rows, sqlite_url
from process_helpers import EXE, StandIn
from videoatlas.evals.datasets.synthetic import ensure_video
from videoatlas.evals.report import load_eval, render_markdown, report
from videoatlas.evals.runner import read_rows

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

QUESTIONS = 3


@pytest.fixture(scope="module")
def suite_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suite")
    ensure_video(root, 60.0, 1)
    return root


@pytest.fixture
def standin() -> Iterator[StandIn]:
    server = StandIn(latency=0.3)
    yield server
    if server.proc.poll() is None:
        server.stop()


def _eval(root: Path, out: Path, base_url: str, db: str, patience: float) -> subprocess.Popen[str]:
    # Small questions (one 2x2 sheet of four frames each) keep the test short; two run at once.
    cmd = [
        EXE, "eval", "run", "--dataset", "synthetic", "--root", str(root), "--durations", "1m",
        "--limit", str(QUESTIONS), "--agent", "uniform", "--frames", "4", "--k", "2", "--cell-px", "160",
        "--concurrency", "2", "--base-url", base_url + "/v1", "--out", str(out), "--db", db,
        "--endpoint-patience", str(patience),
    ]  # fmt: skip
    env = {**os.environ, "VIDEOATLAS_LEASE_HEARTBEAT": "1", "VIDEOATLAS_LEASE_TIMEOUT": "3"}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_rows(results: Path, proc: subprocess.Popen[str], count: int = 1) -> None:
    # A bound on waiting, not on speed: on a loaded machine the first question (and the suite's videos) take a while.
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if results.is_file() and results.read_text().count("\n") >= count:  # whole lines: one may be half written
            return
        time.sleep(0.05)
    raise AssertionError(f"the eval ended or stalled before {count} result(s): {proc.communicate()[1][-2000:]}")


def _every_question_once(out: Path, db: str) -> None:
    """Every question answered in this run, none twice; every run finished, none left running."""
    answered = [r for r in read_rows(out / "results.jsonl") if r["status"] == "ok"]
    assert len(answered) == QUESTIONS and len({r["item"] for r in answered}) == QUESTIONS
    statuses = [s for (s,) in rows(db, "SELECT status FROM va_runs")]
    assert statuses == ["finished"] * QUESTIONS


def test_an_endpoint_restarted_on_its_port_mid_eval_is_waited_for(
    suite_root: Path, standin: StandIn, tmp_path: Path
) -> None:
    out, db = tmp_path / "ev", sqlite_url(tmp_path / "runs.db")
    proc = _eval(suite_root, out, standin.url, db, patience=60)
    _wait_for_rows(out / "results.jsonl", proc)
    standin.stop()
    time.sleep(16)  # longer than the client's whole retry budget (4 retries, backoff capped at 8 s)
    assert proc.poll() is None, "the eval gave up while the endpoint was down"
    restarted = StandIn(latency=0.3, port=standin.port)
    try:
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        restarted.stop()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and "endpoint down, waiting (" in stderr
    assert f"{QUESTIONS} question(s)" in stdout and "0 failed to run" in stdout
    _every_question_once(out, db)


def test_past_the_patience_runs_end_interrupted_and_a_rerun_completes_them(
    suite_root: Path, standin: StandIn, tmp_path: Path
) -> None:
    out, db = tmp_path / "ev", sqlite_url(tmp_path / "runs.db")
    proc = _eval(suite_root, out, standin.url, db, patience=2)
    _wait_for_rows(out / "results.jsonl", proc)
    standin.stop()
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 75, stderr
    assert "Traceback" not in stderr
    [last] = [line for line in stderr.splitlines() if line.startswith("videoatlas eval")]
    assert "did not come back within 2 s" in last and "run the same command again" in last
    first = read_rows(out / "results.jsonl")
    assert {r["status"] for r in first} <= {"ok", "interrupted"} and any(r["status"] == "interrupted" for r in first)
    assert "running" not in {s for (s,) in rows(db, "SELECT status FROM va_runs")}
    rep = report(load_eval(out))
    assert rep["errors"] == 0 and rep["rerun_needed"] and rep["interrupted"] + rep["pending"] > 0
    assert "Re-run needed" in render_markdown(rep)

    restarted = StandIn(latency=0.3, port=standin.port)
    try:
        rerun = _eval(suite_root, out, standin.url, db, patience=60)
        _, stderr = rerun.communicate(timeout=120)
    finally:
        restarted.stop()
    assert rerun.returncode == 0, stderr
    _every_question_once(out, db)
    assert not report(load_eval(out))["rerun_needed"]


@pytest.mark.postgres
def test_a_database_cut_off_mid_eval_is_waited_for(
    suite_root: Path, standin: StandIn, tmp_path: Path, pg_url: str
) -> None:
    out = tmp_path / "ev"
    name = pg_url.rsplit("/", 1)[1]
    proc = _eval(suite_root, out, standin.url, pg_url, patience=60)
    _wait_for_rows(out / "results.jsonl", proc)
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        # The eval's database goes away: no new connection, and every open one cut, mid-write or not.
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        try:
            for _ in range(3):
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
                time.sleep(2)
        finally:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and "0 failed to run" in stdout
    _every_question_once(out, pg_url)


@pytest.mark.postgres
def test_a_database_not_reachable_at_start_is_waited_for(
    suite_root: Path, standin: StandIn, tmp_path: Path, pg_url: str
) -> None:
    """A Slurm task may start while its database restarts, or before the node can reach it: it waits."""
    out = tmp_path / "ev"
    name = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        try:
            proc = _eval(suite_root, out, standin.url, pg_url, patience=60)
            time.sleep(4)
            assert proc.poll() is None, proc.communicate()[1][-2000:]
        finally:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and "0 failed to run" in stdout
    _every_question_once(out, pg_url)


def test_a_database_never_reachable_stops_the_eval_as_an_outage_with_nothing_written(
    suite_root: Path, standin: StandIn, tmp_path: Path
) -> None:
    out = tmp_path / "ev"
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    began = time.monotonic()
    proc = _eval(suite_root, out, standin.url, f"postgresql://eval:secret@127.0.0.1:{port}/x", patience=2)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 75, stderr  # what eval-array.sbatch requeues on
    assert time.monotonic() - began >= 2
    [last] = [line for line in stderr.splitlines() if line.startswith("videoatlas eval")]
    assert f"127.0.0.1:{port}/x could not be reached within 2 s" in last and "Connection refused" in last
    assert "secret" not in stderr and "Traceback" not in stderr
    assert not out.exists()  # nothing written, no empty folder left
