"""The Python API as a LangGraph user calls it: ``videoatlas.ask`` on a real video with the stand-in."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

import videoatlas
from db_helpers import sqlite_url
from videoatlas.errors import BadInputError, VideoError
from videoatlas.persistence.store import TraceStore

pytestmark = pytest.mark.e2e
SMALL: dict[str, Any] = {"workers": 2, "rounds": 2, "k": 4, "cell_px": 96}


def test_ask_from_python_returns_the_answer_the_evidence_and_a_stored_run(
    synth_video: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VIDEOATLAS_HOME", str(tmp_path / "home"))
    video, truth = synth_video
    question = next(q for q in truth["questions"] if q["kind"] == "needle_in_chapter")
    db = sqlite_url(tmp_path / "runs.db")
    events: list[dict[str, Any]] = []
    result = videoatlas.ask(
        video, question["question"], question["choices"], standin=True, db=db, on_event=events.append, **SMALL
    )
    assert result.answer_index is not None and result.answer == question["choices"][result.answer_index]
    assert all(e.start <= e.time <= e.end for e in result.evidence)
    assert result.cost.calls >= 3 and result.stop_reason
    assert events[0] == {"event": "run_started", "run_id": result.run_id}
    assert {e["event"] for e in events} >= {"search_task_done", "round_done"}
    store = TraceStore(db)
    try:
        row = store.run(result.run_id)
        assert row is not None and row.status == "finished" and row.answer == result.answer
        assert row.config["settings"] == {"workers": 2, "rounds": 2} and row.endpoint["standin"] is True
    finally:
        store.close()
    with pytest.raises(BadInputError, match="already finished"):
        videoatlas.resume(result.run_id, db=db, standin=True)


@pytest.fixture
def unconfigured_structlog() -> Iterator[None]:
    """structlog as a script that imports us finds it: configured by nobody (restored afterwards)."""
    was, saved = structlog.is_configured(), structlog.get_config()
    structlog.reset_defaults()
    yield
    if was:
        structlog.configure(**saved)
    else:
        structlog.reset_defaults()


def test_ask_from_python_prints_nothing_on_stdout(
    synth_video: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    unconfigured_structlog: None,
) -> None:
    # structlog's own default prints every level, debug included, to stdout: the caller's output.
    monkeypatch.setenv("VIDEOATLAS_HOME", str(tmp_path / "home"))
    video, truth = synth_video
    question = truth["questions"][0]
    capfd.readouterr()
    result = videoatlas.ask(video, question["question"], question["choices"], standin=True, persist=False, **SMALL)
    out, _err = capfd.readouterr()
    assert result.answer_index is not None and result.cost.calls >= 3
    assert out == ""


def test_bad_input_from_python_is_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="at least two answer choices"):
        videoatlas.ask(tmp_path / "none.mp4", "Which?", ["only"], standin=True, persist=False)
    with pytest.raises(BadInputError, match="not an option of the video-rlm agent: bogus"):
        videoatlas.ask(tmp_path / "none.mp4", "Which?", ["a", "b"], standin=True, persist=False, bogus=1)
    with pytest.raises(VideoError, match="no such file"):
        videoatlas.ask(tmp_path / "none.mp4", "Which?", ["a", "b"], standin=True, persist=False, workers=2)


def test_importing_videoatlas_loads_no_agent_stack() -> None:
    code = "import sys, videoatlas; print(sorted({'langgraph', 'openai', 'aiohttp'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
