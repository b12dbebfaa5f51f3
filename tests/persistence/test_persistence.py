"""Checkpointed runs and traces on real SQLite and PostgreSQL: kill -9 and resume, concurrency, inspection."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from sqlalchemy.exc import DBAPIError

from agent_helpers import ScriptedChat, default_reply, step
from db_helpers import rows, sqlite_url
from process_helpers import EXE, StandIn
from videoatlas.agents.registry import saved_snapshot
from videoatlas.inspect import load_trace
from videoatlas.llm.settings import EndpointSettings
from videoatlas.persistence.db import redact_url
from videoatlas.persistence.store import TraceStore
from videoatlas.runs import resume_run, run_question
from videoatlas.runtime.context import RunConfig

# -- kill -9 and resume -------------------------------------------------------------------------------


def ask_args(video: Path, question: dict[str, Any], url: str, db: str) -> list[str]:
    args = [
        EXE,
        "ask",
        str(video),
        "-q",
        question["question"],
        "--base-url",
        url + "/v1",
        "--db",
        db,
        "--workers",
        "4",
        # Round 1 is the only one: the kill lands in it and the resume finishes it and decides (a second round
        # would come only if the model judged the first one's evidence insufficient: the model's choice).
        "--rounds",
        "1",
        "--traversal",
        "bfs",
        "--bfs-cells",  # one cell per worker: round 1 is one wave of 4 workers, all in flight at the kill
        "1",
        "--bfs-resolution-s",  # no timeline-covering first pass for the count: it is answered in rounds of workers
        "0",
        "--cell-px",
        "160",
        "--json",
    ]
    for choice in question["choices"]:
        args += ["-c", choice]
    return args


def worker_decides_in_flight(db: str, run_id: str, round_no: int) -> int:
    found = rows(
        db,
        "SELECT phase, worker FROM va_node_events WHERE run_id = :r AND node = 'decide' AND round = :n",
        r=run_id,
        n=round_no,
    )
    started = {w for phase, w in found if phase == "start"}
    ended = {w for phase, w in found if phase == "end"}
    return len(started - ended)


@pytest.fixture(scope="module")
def reference_answer(synth_video: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The counting question answered without interruption (once for both databases), and the calls it sent twice."""
    video, truth = synth_video
    question = next(q for q in truth["questions"] if q["kind"] == "counting")
    tmp = tmp_path_factory.mktemp("reference")
    env = {**os.environ, "VIDEOATLAS_HOME": str(tmp / "home")}
    server = StandIn(latency=0.5)
    try:
        full = subprocess.run(
            ask_args(video, question, server.url, sqlite_url(tmp / "ref.db")),
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
        repeats = server.stats()["repeated_completions"]  # calls the run itself makes twice (the model's choice)
    finally:
        server.stop()
    assert full.returncode == 0, full.stderr
    reference = json.loads(full.stdout)
    assert reference["rounds"] == 1
    return question, reference, repeats


@pytest.mark.e2e
@pytest.mark.slow
def test_kill_9_with_a_rounds_workers_in_flight_then_resume(
    db_url: str, synth_video: tuple[Path, dict[str, Any]], tmp_path: Path, reference_answer: Any
) -> None:
    video, _ = synth_video
    question, reference, repeats = reference_answer
    env = {  # short leases: the killed owner's lease goes stale 1.5 s after its last heartbeat
        **os.environ,
        "VIDEOATLAS_HOME": str(tmp_path / "home"),
        "VIDEOATLAS_LEASE_HEARTBEAT": "0.5",
        "VIDEOATLAS_LEASE_TIMEOUT": "1.5",
    }
    server = StandIn(latency=0.5)
    try:
        proc = subprocess.Popen(
            ask_args(video, question, server.url, db_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        run_id, in_flight, frozen = None, 0, False
        deadline = time.monotonic() + 300
        try:
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    ids = rows(  # this run's: the PostgreSQL database may hold other sessions' runs
                        db_url,
                        "SELECT id FROM va_runs WHERE status = 'running' AND video_path = :video "
                        "ORDER BY created_at DESC",
                        video=str(video.resolve()),
                    )
                except DBAPIError:  # the run has not created its tables yet (SQLite or PostgreSQL)
                    ids = []
                if ids:
                    run_id = ids[0][0]
                    in_flight = worker_decides_in_flight(db_url, run_id, 1)
                    if in_flight >= 4:
                        break
                    if in_flight and not frozen:
                        # Round 1 has begun: the endpoint stops answering, so no worker's call can end before
                        # all four are seen in flight, however late a loaded machine writes their events.
                        server.proc.send_signal(signal.SIGSTOP)
                        frozen = True
                time.sleep(0.02)
            assert run_id is not None and in_flight >= 4, "never saw round 1 with 4 workers in flight"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if frozen:
                server.proc.send_signal(signal.SIGCONT)
        time.sleep(2.0)  # past the lease timeout: the run is no longer owned
        # The frozen calls of the killed run are still finished by the server after SIGCONT (one by one, on a loaded
        # machine well past those 2 s): the count starts once none is left.
        settle = time.monotonic() + 60
        while (before := server.stats())["in_flight"] and time.monotonic() < settle:
            time.sleep(0.1)

        resumed = subprocess.run(
            [EXE, "resume", run_id, "--db", db_url, "--json"], capture_output=True, text=True, timeout=600, env=env
        )
        assert resumed.returncode == 0, resumed.stderr
        result = json.loads(resumed.stdout)
        after = server.stats()
    finally:
        server.stop()
    assert result["answer"] == reference["answer"]
    assert result["run_id"] == run_id
    # Calls completed before the kill were not sent again: the only repeats are calls that were in flight (beside
    # those the uninterrupted run made twice itself).
    assert after["repeated_completions"] <= in_flight + repeats
    assert after["completed"] - before["completed"] < reference["cost"]["calls"]
    status = rows(db_url, "SELECT status, answer FROM va_runs WHERE id = :r", r=run_id)
    assert status == [("finished", reference["answer"])]
    refused = subprocess.run([EXE, "resume", run_id, "--db", db_url], capture_output=True, text=True, env=env)
    assert refused.returncode == 2 and "already finished" in refused.stderr and "Traceback" not in refused.stderr


# -- concurrency and traces ---------------------------------------------------------------------------


def adding(name: str, text_: str, schema: dict[str, Any]) -> Any:
    if name == "WorkerStep":
        if "(nothing yet)" in text_:
            return step(
                "ADD_TO_SCRATCHPAD",
                [3],
                [{"cell": 3, "description": "<script>alert(1)</script> seven", "confidence": 0.8}],
            )
        return step("FINISHED")
    return default_reply(name, text_, schema)


async def one_run(video: Path, db: str, run_id: str) -> Any:
    chat = ScriptedChat(script=adding, delay=lambda *_: 0.01)
    return await run_question(
        video,
        "What number is shown?",
        ["one", "two"],
        RunConfig.of(cell_px=64, workers=2, rounds=1),
        EndpointSettings(model="scripted"),
        chat_model=chat,
        db_url=db,
        run_id=run_id,
    )


@pytest.mark.e2e
async def test_twenty_concurrent_runs_lose_nothing(db_url: str, counter_video: Path) -> None:
    prefix = uuid.uuid4().hex[:6]
    ids = [f"{prefix}-{i:02d}" for i in range(20)]
    results = await asyncio.gather(*(one_run(counter_video, db_url, run_id) for run_id in ids))
    assert all(r.answer == "one" for r in results)
    finished = rows(db_url, "SELECT id, status FROM va_runs WHERE id LIKE :p", p=f"{prefix}-%")
    assert sorted(finished) == [(i, "finished") for i in ids]
    for result in results:
        calls = rows(db_url, "SELECT count(*) FROM va_model_calls WHERE run_id = :r", r=result.run_id)[0][0]
        events = rows(
            db_url, "SELECT count(*) FROM va_node_events WHERE run_id = :r AND phase = 'end'", r=result.run_id
        )[0][0]
        assert calls == result.cost.calls  # every call traced
        assert events >= 9  # 5 master nodes + 4 per worker step... all ends written


@pytest.mark.e2e
async def test_a_run_stopped_after_its_last_step_resumes_to_its_answer(counter_video: Path, tmp_path: Path) -> None:
    """A stop between the final checkpoint and the row's update: resume gives the answer and calls nothing."""
    db = sqlite_url(tmp_path / "runs.db")
    done = await one_run(counter_video, db, "late-stop")
    store = TraceStore(db)
    try:
        store.update_run("late-stop", status="interrupted", error="interrupted by SIGINT")
    finally:
        store.close()
    chat = ScriptedChat(script=adding)
    resumed = await resume_run("late-stop", db, chat_model=chat)
    assert resumed.answer == done.answer and chat.seen == []
    assert rows(db, "SELECT status, answer FROM va_runs WHERE id = :r", r="late-stop") == [("finished", done.answer)]


@pytest.mark.e2e
async def test_a_run_cancelled_while_a_checkpoint_is_saved_resumes_to_its_answer(
    counter_video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled after a step's tasks saved their writes but before the next checkpoint was saved (the
    cancel a client that hangs up sends lands there as often as not): LangGraph's ``next`` is empty,
    yet the run has that step to finish, and resume finishes it."""
    db = sqlite_url(tmp_path / "runs.db")
    whole = await one_run(counter_video, db, "whole")
    saving = asyncio.Event()
    put = AsyncSqliteSaver.aput

    async def stalled(self: AsyncSqliteSaver, config: Any, *args: Any) -> Any:
        if args[1].get("step") == 1 and not config["configurable"].get("checkpoint_ns") and not saving.is_set():
            saving.set()
            await asyncio.Event().wait()  # the save never ends: the run is cancelled while it waits
        return await put(self, config, *args)

    monkeypatch.setattr(AsyncSqliteSaver, "aput", stalled)
    task = asyncio.ensure_future(one_run(counter_video, db, "cut"))
    await asyncio.wait_for(saving.wait(), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    monkeypatch.undo()
    assert rows(db, "SELECT status FROM va_runs WHERE id = :r", r="cut") == [("interrupted",)]
    cut = await saved_snapshot(db, "video-rlm", "cut")
    assert cut.next == () and cut.tasks and all(t.result is not None for t in cut.tasks)
    assert (await load_trace("cut", db))["pending"] == sorted({t.name for t in cut.tasks})  # shown as left to do
    resumed = await resume_run("cut", db, chat_model=ScriptedChat(script=adding))
    assert resumed.answer == whole.answer
    assert [e.time for e in resumed.evidence] == [e.time for e in whole.evidence]
    assert rows(db, "SELECT status, answer FROM va_runs WHERE id = :r", r="cut") == [("finished", whole.answer)]


@pytest.mark.e2e
def test_runs_trace_and_report_commands(counter_video: Path, tmp_path: Path) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    result = asyncio.run(one_run(counter_video, db, "inspect-me"))
    env = {**os.environ, "VIDEOATLAS_DB": db, "VIDEOATLAS_HOME": str(tmp_path)}
    listed = json.loads(subprocess.run([EXE, "runs", "--json"], capture_output=True, text=True, env=env).stdout)
    assert [r["id"] for r in listed] == ["inspect-me"] and listed[0]["status"] == "finished"
    assert listed[0]["agent"] == "video-rlm"
    tree = subprocess.run([EXE, "trace", "inspect-me"], capture_output=True, text=True, env=env)
    assert tree.returncode == 0, tree.stderr
    assert "round 1: probe" in tree.stdout and "r1w1 -> 0" in tree.stdout and "ADD_TO_SCRATCHPAD [3]" in tree.stdout
    out = tmp_path / "run.html"
    report = subprocess.run([EXE, "report", "inspect-me", "-o", str(out)], capture_output=True, text=True, env=env)
    assert report.returncode == 0, report.stderr
    page = out.read_text()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("data:image/jpeg;base64,") >= 3  # root grid, scratchpad, the steps' views
    assert f"{result.cost.calls}" in subprocess.run([EXE, "runs"], capture_output=True, text=True, env=env).stdout
    missing = subprocess.run([EXE, "trace", "nope"], capture_output=True, text=True, env=env)
    assert missing.returncode == 2 and "no run 'nope'" in missing.stderr


@pytest.mark.e2e
def test_api_keys_and_passwords_stay_out_of_traces(synth_video: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    video, truth = synth_video
    question = next(q for q in truth["questions"] if q["kind"] == "needle_in_chapter")
    secret = "sk-very-secret-" + uuid.uuid4().hex
    db = sqlite_url(tmp_path / "runs.db")
    server = StandIn(latency=0.0)
    try:
        env = {**os.environ, "VIDEOATLAS_HOME": str(tmp_path), "VIDEOATLAS_API_KEY": secret}
        args = ask_args(video, question, server.url, db)
        proc = subprocess.run(
            [args[0], "--log-level", "debug", "--log-json", *args[1:]],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stderr[-2000:]
    run_id = json.loads(proc.stdout)["run_id"]
    report = tmp_path / "r.html"
    subprocess.run([EXE, "report", run_id, "--db", db, "-o", str(report)], check=True, env=env, capture_output=True)
    assert secret not in proc.stdout and secret not in proc.stderr
    logged = [json.loads(line) for line in proc.stderr.splitlines() if line.startswith("{")]
    calls = [e for e in logged if e.get("event") == "model_call"]
    assert calls and all(e.get("run_id") == run_id and e.get("node") for e in calls)
    assert any(e.get("worker") for e in calls)  # worker calls carry their worker
    run_file = tmp_path / "logs" / f"{run_id}.jsonl"
    assert run_file.is_file() and secret not in run_file.read_text()
    assert all(json.loads(line)["run_id"] == run_id for line in run_file.read_text().splitlines())
    assert secret.encode() not in (tmp_path / "runs.db").read_bytes()
    assert secret not in report.read_text()
    assert redact_url("postgresql://alice:hunter2@db:5432/x") == "postgresql://alice:***@db:5432/x"
    bad = subprocess.run(
        [EXE, "runs", "--db", "postgresql://alice:hunter2@127.0.0.1:1/x"], capture_output=True, text=True, env=env
    )
    assert bad.returncode != 0 and "hunter2" not in bad.stderr and "Traceback" not in bad.stderr
