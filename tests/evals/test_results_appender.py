"""The results file after a kill mid-write: the next eval appends whole rows after the last whole one."""

from __future__ import annotations

from pathlib import Path

import pytest

from videoatlas.evals.results import Appender, read_rows

pytestmark = pytest.mark.unit


def test_rows_appended_after_a_torn_last_line_are_all_read(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text('{"key": "a", "status": "ok"}\n{"key": "b", "sta', encoding="utf-8")
    assert read_rows(results) == [{"key": "a", "status": "ok"}]  # the torn line is not a row
    appender = Appender(results)
    appender.write({"key": "b", "status": "ok"})
    appender.write({"key": "c", "status": "ok"})
    appender.close()
    assert read_rows(results) == [{"key": k, "status": "ok"} for k in "abc"]
    assert results.read_text(encoding="utf-8").count("\n") == 3


def test_a_whole_file_is_appended_to_as_it_is(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text('{"key": "a", "status": "ok"}\n', encoding="utf-8")
    appender = Appender(results)
    appender.write({"key": "b", "status": "ok"})
    appender.close()
    assert results.read_text(encoding="utf-8") == '{"key": "a", "status": "ok"}\n{"key": "b", "status": "ok"}\n'
