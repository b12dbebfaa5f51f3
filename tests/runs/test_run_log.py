"""A run's log file holds the lines logged for that run, and a run that logged nothing leaves no file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import structlog

from videoatlas.logging import configure_logging, run_log

pytestmark = pytest.mark.unit


def test_a_run_that_logs_nothing_leaves_no_file_and_one_that_does_keeps_its_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VIDEOATLAS_HOME", str(tmp_path))
    configure_logging("warning")
    log = structlog.get_logger("test")
    with structlog.contextvars.bound_contextvars(run_id="quiet"), run_log("quiet") as quiet:
        log.info("below the level")  # filtered out: nothing is written
    assert not quiet.exists() and not (tmp_path / "logs").exists()
    with structlog.contextvars.bound_contextvars(run_id="loud"), run_log("loud") as loud:
        log.warning("endpoint_slow", seconds=12)
    lines = [json.loads(line) for line in loud.read_text().splitlines()]
    assert [(e["event"], e["seconds"], e["run_id"]) for e in lines] == [("endpoint_slow", 12, "loud")]
    assert "endpoint_slow" in capsys.readouterr().err
