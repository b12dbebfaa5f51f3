"""Runs on a cluster, as real processes: one owner per run, kill -9 and a stale lease, SIGTERM during
`ask` and during `eval run` (Slurm's preemption and time limit), each then resumed to the same result."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import DBAPIError

from db_helpers import rows, sqlite_url
from process_helpers import EXE, StandIn
from videoatlas.cli.runs_table import list_runs
from videoatlas.evals.datasets.synthetic import ensure_video
from videoatlas.evals.runner import read_rows
from videoatlas.persistence.lease import LeaseTiming
from videoatlas.persistence.queries import RunSearch
from videoatlas.persistence.store import TraceStore

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

LEASE = {"VIDEOATLAS_LEASE_HEARTBEAT": "0.5", "VIDEOATLAS_LEASE_TIMEOUT": "5"}
SMALL = ["--workers", "2", "--rounds", "2", "--k", "4", "--cell-px", "96"]
"""A run of about ten calls: long enough to stop in the middle, short enough for a test."""


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "VIDEOATLAS_HOME": str(tmp_path / "home"), **LEASE}


def ask_cmd(video: Path, question: dict[str, Any], url: str, db: str) -> list[str]:
    args = [EXE, "ask", str(video), "-q", question["question"], "--base-url", url + "/v1", "--db", db, *SMALL]
    for choice in question["choices"]:
        args += ["-c", choice]
    return [*args, "--json"]


@pytest.fixture(scope="module")
def question(synth_video: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    _, truth = synth_video
    return next(q for q in truth["questions"] if q["kind"] == "needle_in_chapter")


@pytest.fixture(scope="module")
def reference(
    synth_video: tuple[Path, dict[str, Any]], question: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The question answered by one process without interruption."""
    tmp = tmp_path_factory.mktemp("reference")
    server = StandIn(latency=0.0)
    try:
        done = subprocess.run(
            ask_cmd(synth_video[0], question, server.url, sqlite_url(tmp / "ref.db")),
            capture_output=True,
            text=True,
            timeout=600,
            env=_env(tmp),
        )
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    assert result["cost"]["calls"] >= 6
    return result


@pytest.fixture
def slow_server() -> Iterator[StandIn]:
    server = StandIn(latency=1.0)
    yield server
    server.stop()


def run_ids(db: str, question: dict[str, Any]) -> set[str]:
    try:
        return {r[0] for r in rows(db, "SELECT id FROM va_runs WHERE question = :q", q=question["question"])}
    except DBAPIError:  # no tables yet
        return set()


def start_and_wait(cmd: list[str], env: dict[str, str], db: str, question: dict[str, Any]) -> tuple[Any, str]:
    """Start ``ask``; return it and its run id once two of its model calls are recorded."""
    known = run_ids(db, question)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        new = run_ids(db, question) - known
        if new:
            [run_id] = new
            if rows(db, "SELECT count(*) FROM va_model_calls WHERE run_id = :r", r=run_id)[0][0] >= 2:
                return proc, run_id
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"the run ended or never got going: {proc.communicate()[1][-2000:]}")


def shown_status(db: str, run_id: str) -> dict[str, Any]:
    store = TraceStore(db)
    try:
        return next(r for r in list_runs(store, RunSearch(), 1000, LeaseTiming.from_env(LEASE)) if r["id"] == run_id)
    finally:
        store.close()


def assert_one_line(stderr: str, *fragments: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_one_owner_per_run_and_a_stale_run_taken_over_by_one_of_two_resumes(
    db_url: str,
    synth_video: tuple[Path, dict[str, Any]],
    question: dict[str, Any],
    reference: dict[str, Any],
    slow_server: StandIn,
    tmp_path: Path,
) -> None:
    env = _env(tmp_path)
    owner, run_id = start_and_wait(ask_cmd(synth_video[0], question, slow_server.url, db_url), env, db_url, question)

    # The endpoint stops answering while the second process tries: the owner, waiting on its model call,
    # cannot finish the run in the meantime however slowly that process starts on a loaded machine.
    slow_server.proc.send_signal(signal.SIGSTOP)
    try:
        refused = subprocess.run([EXE, "resume", run_id, "--db", db_url], capture_output=True, text=True, env=env)
        assert refused.returncode == 7
        assert_one_line(refused.stderr, f"run {run_id} is being run by owner", f"pid {owner.pid}", "--force")
        assert owner.poll() is None  # the owner was alive all along, and still runs
        assert shown_status(db_url, run_id)["status"] == "running"
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=30)
    finally:
        slow_server.proc.send_signal(signal.SIGCONT)
    deadline = time.monotonic() + 120
    while shown_status(db_url, run_id)["status"] != "stale":  # no heartbeat for the timeout: stale
        assert time.monotonic() < deadline, "the killed run never looked stale"
        time.sleep(0.5)
    listed = subprocess.run([EXE, "runs", "--db", db_url, "--status", "stale", "--json"], capture_output=True, env=env)
    assert run_id in [r["id"] for r in json.loads(listed.stdout)]

    # Two processes resume the stale run at once: exactly one proceeds, the other is refused.
    resumes = [
        subprocess.Popen(
            [EXE, "resume", run_id, "--db", db_url, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    outcomes = []
    for p in resumes:
        out, err = p.communicate(timeout=600)
        outcomes.append((p.returncode, out, err))
    assert sorted(code for code, _, _ in outcomes) == [0, 7], outcomes
    out_won = next(out for code, out, _ in outcomes if code == 0)
    err_lost = next(err for code, _, err in outcomes if code == 7)
    assert_one_line(err_lost, f"run {run_id}")
    assert "is being run by owner" in err_lost or "just taken over" in err_lost
    assert json.loads(out_won)["answer"] == reference["answer"]
    assert rows(db_url, "SELECT status, answer FROM va_runs WHERE id = :r", r=run_id) == [
        ("finished", reference["answer"])
    ]
    assert rows(db_url, "SELECT count(*) FROM va_leases WHERE run_id = :r", r=run_id) == [(0,)]


def test_sigterm_during_ask_interrupts_the_run_which_resumes_to_the_same_answer(
    synth_video: tuple[Path, dict[str, Any]],
    question: dict[str, Any],
    reference: dict[str, Any],
    slow_server: StandIn,
    tmp_path: Path,
) -> None:
    env = _env(tmp_path)
    db = sqlite_url(tmp_path / "runs.db")
    proc, run_id = start_and_wait(ask_cmd(synth_video[0], question, slow_server.url, db), env, db, question)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)  # Slurm signals a job's script and its children: a repeat changes nothing
    assert proc.stderr is not None
    first = proc.stderr.readline()
    proc.send_signal(signal.SIGTERM)  # nor does one while the interpreter shuts down (most of a second)
    _, rest = proc.communicate(timeout=60)
    err = first + rest
    assert proc.returncode == 143
    assert_one_line(err, "stopped by SIGTERM", f"videoatlas resume {run_id}")

    listed = subprocess.run(
        [EXE, "runs", "--db", db, "--status", "interrupted", "--json"], capture_output=True, env=env
    )
    [shown] = json.loads(listed.stdout)
    assert shown["id"] == run_id and shown["error"] == "interrupted by SIGTERM"
    assert shown["calls"] >= 2 and shown["tokens"] > 0 and shown["cost_so_far"]
    assert rows(db, "SELECT count(*) FROM va_leases WHERE run_id = :r", r=run_id) == [(0,)]  # given back

    resumed = subprocess.run([EXE, "resume", run_id, "--db", db, "--json"], capture_output=True, text=True, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["answer"] == reference["answer"]


def test_ctrl_c_during_a_standin_ask_prints_one_line_whose_resume_command_finishes_the_run(
    synth_video: tuple[Path, dict[str, Any]], question: dict[str, Any], reference: dict[str, Any], tmp_path: Path
) -> None:
    """The in-process stand-in dies with its process: the printed command starts a new one (not its old port)."""
    env = _env(tmp_path)
    db = sqlite_url(tmp_path / "runs.db")
    cmd = [EXE, "ask", str(synth_video[0]), "-q", question["question"], "--standin", "--db", db, *SMALL, "--json"]
    for choice in question["choices"]:
        cmd += ["-c", choice]
    proc, run_id = start_and_wait(cmd, env, db, question)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    notice, *stop = err.splitlines()
    assert notice.startswith("starting the STAND-IN VLM")  # written at the start, not at the stop
    line = assert_one_line("\n".join(stop), "stopped by SIGINT", f"run {run_id} is interrupted")
    printed = line.split("resume it with: ", 1)[1]
    assert rows(db, "SELECT status FROM va_runs WHERE id = :r", r=run_id) == [("interrupted",)]

    resumed = subprocess.run(shlex.split(printed), capture_output=True, text=True, timeout=600, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert f"answer: {chr(ord('A') + reference['answer_index'])}. {reference['answer']}" in resumed.stdout
    assert rows(db, "SELECT status, answer FROM va_runs WHERE id = :r", r=run_id) == [("finished", reference["answer"])]


@pytest.fixture(scope="module")
def suite_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suite")
    ensure_video(root, 60.0, 1)
    return root


def test_sigterm_during_eval_run_then_the_same_command_finishes_answering_each_question_once(
    suite_root: Path, tmp_path: Path
) -> None:
    server = StandIn(latency=0.5)
    db = sqlite_url(tmp_path / "runs.db")
    out = tmp_path / "ev"
    cmd = [
        sys.executable, "-m", "videoatlas.cli.main", "eval", "run", "--dataset", "synthetic", "--root",
        str(suite_root), "--durations", "1m", "--styles", "chapters", "--limit", "4", "--concurrency", "2", *SMALL,
        "--base-url", server.url + "/v1", "--out", str(out), "--db", db, "--quiet",
    ]  # fmt: skip
    env = _env(tmp_path)
    results = out / "results.jsonl"
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if results.is_file() and results.read_text().count("\n") >= 1:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the eval ended before it could be stopped"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 143
        assert_one_line(err, "stopped by SIGTERM", "run the same command again to resume")
        before = read_rows(results)
        assert 1 <= len(before) < 4
        interrupted = rows(db, "SELECT id FROM va_runs WHERE status = 'interrupted'")
        assert interrupted, "no question was in flight at the signal"

        again = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    finally:
        server.stop()
    assert again.returncode == 0, again.stderr
    after = read_rows(results)
    assert after[: len(before)] == before  # nothing rewritten
    assert len(after) == 4 and len({r["item"] for r in after}) == 4 and all(r["status"] == "ok" for r in after)
    sources = {r["run_id"]: r["source"] for r in after[len(before) :]}
    assert {run_id for (run_id,) in interrupted} <= set(sources)
    assert "resumed" in sources.values()  # a question stopped mid-run went on from its checkpoint
    # Each question's final decision was made once: finished questions were not run again.
    decisions = rows(
        db,
        "SELECT run_id, count(*) FROM va_model_calls "
        "WHERE node = 'decide' AND outcome NOT IN ('failed', 'cancelled') GROUP BY run_id",
    )
    assert sorted(n for _, n in decisions) == [1, 1, 1, 1]
