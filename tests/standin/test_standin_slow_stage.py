"""The stand-in says which stage of a reply is slow while it runs (reading pixels on a CPU takes a while)."""

from __future__ import annotations

import asyncio

import pytest
from structlog.testing import capture_logs

from videoatlas_standin import chat

pytestmark = pytest.mark.unit


async def test_a_slow_stage_is_logged_while_it_runs_and_its_result_comes_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chat, "SLOW_STAGE_S", 0.05)
    with capture_logs() as logs:
        got = await chat._watched("reading the text of image 1 of 1", asyncio.sleep(0.23, result=7))
    assert got == 7
    slow = [entry for entry in logs if entry["event"] == "standin_slow_stage"]
    assert len(slow) >= 3 and {entry["stage"] for entry in slow} == {"reading the text of image 1 of 1"}
    assert all(entry["log_level"] == "warning" for entry in slow)


async def test_a_quick_stage_says_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chat, "SLOW_STAGE_S", 1.0)
    with capture_logs() as logs:
        assert await chat._watched("reading", asyncio.sleep(0.01, result="x")) == "x"
    assert logs == []
