"""A run's status as shown, on real SQLite and PostgreSQL: ``videoatlas runs``, the web UI and the lease agree.

``stale`` (stored as running, but its owner is gone) has one definition; the CLI's table, the UI's
runs page (filtered and counted in SQL) and its eval pages (runs by id) show it, and a claim takes
over exactly the runs they show as stale.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from db_helpers import run_row
from process_helpers import EXE
from videoatlas.cli.runs_table import list_runs, runs_lines
from videoatlas.errors import RunOwnedError
from videoatlas.persistence.lease import LeaseRow, LeaseTiming
from videoatlas.persistence.queries import RunSearch
from videoatlas.persistence.store import TraceStore
from videoatlas.ui import runs_list

TIMEOUT_S = 2.0


@pytest.fixture
def timing(monkeypatch: pytest.MonkeyPatch) -> LeaseTiming:
    """Short leases, read the way every reader reads them: from the environment."""
    monkeypatch.setenv("VIDEOATLAS_LEASE_HEARTBEAT", "0.2")
    monkeypatch.setenv("VIDEOATLAS_LEASE_TIMEOUT", str(TIMEOUT_S))
    return LeaseTiming.from_env()


@pytest.fixture
def store(db_url: str) -> Iterator[TraceStore]:
    store = TraceStore(db_url)
    yield store
    store.close()


def _add_run(store: TraceStore, run_id: str, status: str, minutes_ago: int, agent: str = "uniform") -> None:
    when = datetime.now(UTC) - timedelta(minutes=minutes_ago)
    store.start_run(run_row(run_id, created_at=when, updated_at=when, status=status, agent=agent))


def _dead_pid() -> int:
    """The pid of a process of this host that has exited (and been reaped)."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=60)
    return gone.pid


@pytest.fixture
def runs(store: TraceStore, timing: LeaseTiming) -> dict[str, str]:
    """Runs in every state a lease can leave a running run in, newest first; their status as shown."""
    tag = uuid.uuid4().hex[:6]
    ids = {k: f"{k}-{tag}" for k in ("live", "expired", "dead-owner", "no-lease", "done")}
    for minutes_ago, (kind, run_id) in enumerate(ids.items()):
        _add_run(store, run_id, "finished" if kind == "done" else "running", minutes_ago)
        if kind in ("live", "expired", "dead-owner"):
            store.claim_run(run_id, timing)
    with store.engine.begin() as conn:  # silent for longer than the timeout
        aged = LeaseRow.heartbeat_at - 10 * TIMEOUT_S
        conn.execute(update(LeaseRow).where(LeaseRow.run_id == ids["expired"]).values(heartbeat_at=aged))
        # renewed just now, but by a process of this host that no longer exists (a kill -9)
        conn.execute(update(LeaseRow).where(LeaseRow.run_id == ids["dead-owner"]).values(pid=_dead_pid()))
    shown = {"live": "running", "expired": "stale", "dead-owner": "stale", "no-lease": "stale", "done": "finished"}
    return {ids[k]: v for k, v in shown.items()}


def _ui_page(store: TraceStore, status: str = "") -> dict[str, str]:
    page = runs_list.runs_page(store.engine, runs_list.RunFilter(status=status))
    assert page.total == len(page.rows)
    return {r["id"]: r["status"] for r in page.rows}


def test_cli_table_ui_listing_and_lease_agree_on_stale_runs(
    store: TraceStore, timing: LeaseTiming, runs: dict[str, str]
) -> None:
    cli = {r["id"]: r["status"] for r in list_runs(store, RunSearch(), 100, timing)}
    assert cli == runs
    assert _ui_page(store) == runs
    assert {k: v["status"] for k, v in runs_list.runs_by_id(store.engine, list(runs)).items()} == runs

    for status in ("stale", "running", "finished"):
        wanted = {k: v for k, v in runs.items() if v == status}
        assert _ui_page(store, status) == wanted, status
        assert {r["id"]: r["status"] for r in list_runs(store, RunSearch(status=status), 100, timing)} == wanted, status

    stale = list_runs(store, RunSearch(status="stale"), 100, timing)
    assert all(r["error"].startswith("owner stopped") for r in stale)
    assert [r["owner"] is None for r in stale] == [False, False, True]  # expired, dead owner, no lease

    # The lease takes over exactly the runs shown as stale, and refuses the one shown as running.
    for run_id, status in runs.items():
        if status == "stale":
            store.claim_run(run_id, timing)
        elif status == "running":
            with pytest.raises(RunOwnedError):
                store.claim_run(run_id, timing)


def test_a_status_filter_is_applied_before_the_limit(
    store: TraceStore, timing: LeaseTiming, runs: dict[str, str]
) -> None:
    """``runs --status stale --limit 2``: the two newest stale runs, whatever newer runs are doing."""
    newest_stale = [k for k, v in runs.items() if v == "stale"][:2]
    assert [r["id"] for r in list_runs(store, RunSearch(status="stale"), 2, timing)] == newest_stale


def test_the_listing_names_each_runs_agent(store: TraceStore, timing: LeaseTiming) -> None:
    tag = uuid.uuid4().hex[:6]
    _add_run(store, f"rlm-{tag}", "finished", 1, agent="video-rlm")
    _add_run(store, f"seek-{tag}", "finished", 0, agent="videoseek")
    listed = [r for r in list_runs(store, RunSearch(), 100, timing) if r["id"].endswith(tag)]
    assert [(r["id"], r["agent"]) for r in listed] == [(f"seek-{tag}", "videoseek"), (f"rlm-{tag}", "video-rlm")]
    header, *lines = runs_lines(listed)
    assert header.split()[:4] == ["id", "status", "agent", "created"]
    assert [line.split()[:3] for line in lines] == [
        [f"seek-{tag}", "finished", "videoseek"],
        [f"rlm-{tag}", "finished", "video-rlm"],
    ]


def test_runs_filters_on_agent_video_prompt_set_and_text_like_the_ui(
    store: TraceStore, db_url: str, tmp_path: Path
) -> None:
    """``videoatlas runs --agent/--video/--prompts/--search``, the real command on each backend."""
    mine = tmp_path / "my prompts"
    mine.mkdir()
    rows = {
        "seek-1": {
            "agent": "videoseek",
            "video_path": "/data/lecture-01.mp4",
            "question": "Which code is shown?",
            "answer": "KX-4417",
        },
        "rlm-mine": {
            "agent": "video-rlm",
            "video_path": "/data/lecture-02.mp4",
            "question": "How many badges?",
            "prompt_set": str(mine.resolve()),
        },
        "rlm-default": {"agent": "video-rlm", "video_path": "/data/match.mp4", "question": "Who scores first?"},
    }
    for minutes_ago, (run_id, fields) in enumerate(rows.items()):
        when = datetime.now(UTC) - timedelta(minutes=minutes_ago)
        store.start_run(run_row(run_id, created_at=when, updated_at=when, **fields))

    def listed(*args: str) -> list[str]:
        proc = subprocess.run(
            [EXE, "runs", "--db", db_url, "--json", *args], capture_output=True, text=True, cwd=tmp_path
        )
        assert proc.returncode == 0, proc.stderr
        return [r["id"] for r in json.loads(proc.stdout)]

    assert listed() == ["seek-1", "rlm-mine", "rlm-default"]
    assert listed("--agent", "video-rlm") == ["rlm-mine", "rlm-default"]
    assert listed("--video", "lecture") == ["seek-1", "rlm-mine"]
    assert listed("--prompts", "my prompts") == ["rlm-mine"]  # a folder, named as ask --prompts names it
    assert listed("--prompts", str(mine)) == ["rlm-mine"]
    assert listed("--prompts", "default") == ["seek-1", "rlm-default"]  # the built-in set
    assert listed("--search", "kx-4417") == ["seek-1"]  # the answer, any case
    assert listed("--search", "scores FIRST") == ["rlm-default"]  # the question
    assert listed("--search", "rlm-") == ["rlm-mine", "rlm-default"]  # the start of the id
    assert listed("--agent", "video-rlm", "--video", "lecture", "--limit", "5") == ["rlm-mine"]
    assert listed("--agent", "uniform") == []

    table = subprocess.run([EXE, "runs", "--db", db_url, "--agent", "eea"], capture_output=True, text=True)
    assert table.returncode == 0 and table.stdout == "no runs match\n"
    bad = subprocess.run([EXE, "runs", "--db", db_url, "--agent", "gpt"], capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid choice: 'gpt'" in bad.stderr and "Traceback" not in bad.stderr
