"""The lmms-eval model's questions as resumable runs: real videos, the stand-in over HTTP, a SQLite run store."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from db_helpers import sqlite_url
from lmms_helpers import synthetic_items
from videoatlas.errors import EndpointUnreachableError, VideoError
from videoatlas.evals.items import EvalItem
from videoatlas.limits import CHOICE_LETTERS
from videoatlas.lmms.docs import run_of
from videoatlas.lmms.session import Session
from videoatlas.lmms.settings import parse_model_args
from videoatlas.persistence.store import TraceStore
from videoatlas_standin.server import RunningServer, StandinServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def items(tmp_path_factory: pytest.TempPathFactory) -> list[EvalItem]:
    return synthetic_items(tmp_path_factory.mktemp("suite"), 3)


@pytest.fixture
def standin() -> Iterator[RunningServer]:
    with RunningServer(StandinServer()) as server:
        yield server


def _session(base_url: str, db: str) -> Session:
    session = Session(parse_model_args({"agent": "uniform", "base_url": base_url, "db": db, "concurrency": 2}))
    session.open()
    return session


def _chat_requests(server: RunningServer) -> int:
    return server.standin.stats.chat_requests


def test_a_command_run_again_asks_only_what_it_had_not_answered(
    items: list[EvalItem], standin: RunningServer, tmp_path: Path
) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    first = _session(standin.base_url, db)
    cut_short = first.answer([items[0], items[1], items[0]])  # as if the command had stopped after two
    assert first.tally.sources == {"run": 2} and cut_short[2] == cut_short[0]  # a repeated question runs once
    cut_short = cut_short[:2]
    asked_for_two = _chat_requests(standin)
    assert asked_for_two > 0

    again = _session(standin.base_url, db)
    responses = again.answer(items)
    assert responses[:2] == cut_short
    assert again.tally.sources == {"db-cache": 2, "run": 1}
    asked_for_all = _chat_requests(standin)
    assert asked_for_all > asked_for_two

    third = _session(standin.base_url, db)
    assert third.answer(items) == responses
    assert third.tally.sources == {"db-cache": 3}
    assert _chat_requests(standin) == asked_for_all  # nothing asked

    store = TraceStore.shared(db)
    try:
        for item, text in zip(items, responses, strict=True):
            run_id = run_of(text)
            assert run_id is not None and re.fullmatch(r"ev-[0-9a-f]{24}", run_id)
            row = store.run(run_id)
            assert row is not None and row.status == "finished" and row.question == item.question
            letter = text.split("</think>")[1]
            assert row.answer == item.choices[CHOICE_LETTERS.index(letter)]
    finally:
        store.release()


def test_a_missing_video_stops_before_anything_is_asked(
    items: list[EvalItem], standin: RunningServer, tmp_path: Path
) -> None:
    gone = replace(items[1], video=str(tmp_path / "gone.mp4"))
    session = _session(standin.base_url, sqlite_url(tmp_path / "runs.db"))
    with pytest.raises(VideoError, match=rf"1 of 3 question\(s\) cannot run \(question {gone.id}: no such file: "):
        session.answer([items[0], gone, items[2]])
    assert _chat_requests(standin) == 0


def test_an_endpoint_that_is_down_is_one_line_before_any_question(tmp_path: Path) -> None:
    with pytest.raises(EndpointUnreachableError) as caught:
        _session("http://127.0.0.1:9/v1", sqlite_url(tmp_path / "runs.db"))
    assert "127.0.0.1:9" in str(caught.value) and "\n" not in str(caught.value)


def test_standin_true_starts_the_stand_in_for_the_session_and_stops_it(items: list[EvalItem], tmp_path: Path) -> None:
    session = Session(parse_model_args({"agent": "uniform", "standin": True, "db": sqlite_url(tmp_path / "runs.db")}))
    session.open()
    try:
        [text] = session.answer(items[:1])
    finally:
        session.close()
    assert run_of(text) is not None and text.split("</think>")[1] in CHOICE_LETTERS[:4]
    assert session.tally.sources == {"run": 1}
