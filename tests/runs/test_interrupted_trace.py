"""A Ctrl-C is no crash: `trace` and the run page show the run as interrupted, with its resume command,
and the calls the stop cancelled are counted apart, never as failed calls."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import DBAPIError

from db_helpers import rows, sqlite_url
from process_helpers import EXE

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SMALL = ["--workers", "2", "--rounds", "2", "--k", "4", "--cell-px", "96"]


def _started(proc: subprocess.Popen[str], db: str) -> str:
    """The run's id once its first model call is recorded (the run is then inside a node)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            found = rows(db, "SELECT run_id FROM va_model_calls")
        except DBAPIError:  # no tables yet
            found = []
        if found:
            return str(found[0][0])
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"the run ended or never got going: {proc.communicate()[1][-2000:]}")


def test_ctrl_c_shows_as_interrupted_in_trace_and_on_the_run_page(
    synth_video: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    env = {**os.environ, "VIDEOATLAS_HOME": str(tmp_path / "home")}
    db = sqlite_url(tmp_path / "runs.db")
    question = next(q for q in synth_video[1]["questions"] if q["kind"] == "needle_in_chapter")
    cmd = [EXE, "ask", str(synth_video[0]), "-q", question["question"], "--standin", "--db", db, *SMALL, "--json"]
    for choice in question["choices"]:
        cmd += ["-c", choice]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    run_id = _started(proc, db)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err

    shown = subprocess.run([EXE, "trace", run_id, "--db", db], capture_output=True, text=True, env=env, timeout=120)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert "[interrupted]" in text and "stopped: interrupted by SIGINT" in text, text
    assert "interrupted in node " in text and f"(resume with: videoatlas resume {run_id})" in text, text
    assert "CancelledError" not in text and "failed in node" not in text and "FAILED" not in text, text
    assert "(0 failed" in text, text

    as_json = subprocess.run(
        [EXE, "trace", run_id, "--db", db, "--json"], capture_output=True, text=True, env=env, timeout=120
    )
    failure = json.loads(as_json.stdout)["failure"]
    assert failure["interrupted"] is True and failure["call"] is None
    assert failure["spent"]["failed_calls"] == 0 and failure["spent"]["calls"] >= 1

    page = tmp_path / "run.html"
    made = subprocess.run(
        [EXE, "report", run_id, "--db", db, "-o", str(page)], capture_output=True, text=True, env=env, timeout=120
    )
    assert made.returncode == 0, made.stderr
    html = page.read_text(encoding="utf-8")
    assert "Interrupted in node" in html and "Failed in node" not in html and "CancelledError" not in html
    assert "(0 failed" in html
