"""EEA and VideoSeek read the whole speech track at their start, as a subtitle file or a frame index is read.

A five-minute long talk (:mod:`videoatlas.synth.long_talk`: routine announcements and facts said
once, spoken by espeak-ng, heard by the stand-in's Whisper tiny.en) has ten 30 s chunks. A first
look at the whole video hears only its middle chunk; EEA's start (to match its queries against, as
it matches them against the frame index) and VideoSeek's planner (which starts from the subtitles
when there is a file) hear all ten, so a fact said away from the middle is known from the start.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from db_helpers import rows, sqlite_url
from videoatlas.environment.speech import CHUNK_S, chunk_count
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import RunResult, run_question
from videoatlas.runtime.config import RunConfig
from videoatlas.runtime.speech import forget as forget_speech
from videoatlas.synth import speech
from videoatlas.synth.long_talk import Talk, long_talk
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def talk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Talk, Path, EndpointSettings]]:
    talk = long_talk(300.0)
    root = tmp_path_factory.mktemp("track_read_first")
    video = speech.write_speech_video(root / "talk.mp4", cards=talk.cards, lines=talk.lines, duration=300.0)
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield talk, video, EndpointSettings(base_url=server.base_url, model="")


def ask(talk: tuple[Talk, Path, EndpointSettings], tmp_path: Path, agent: str, **settings: int) -> RunResult:
    """The question about the driver, on a run store of its own, as a new process would ask it."""
    said, video, endpoint = talk
    [question] = [q for q in said.questions if q.answer == "Maria"]
    forget_speech()  # nothing heard by an earlier test is remembered in memory
    config = RunConfig.of(agent=agent, **settings)
    db = sqlite_url(tmp_path / "runs.db")
    return asyncio.run(run_question(video, question.question, list(question.choices), config, endpoint, db_url=db))


def said_at(said: Talk) -> float:
    at = said.said_at[[q.answer for q in said.questions].index("Maria")]
    assert int(at // CHUNK_S) != chunk_count(said.duration) // 2  # a first look at the whole video would not hear it
    return at


def test_eea_hears_every_chunk_at_its_start_and_anchors_where_the_fact_is_said(
    talk: tuple[Talk, Path, EndpointSettings], tmp_path: Path
) -> None:
    at = said_at(talk[0])
    result = ask(talk, tmp_path, "eea", expansions=1)  # one round: the start must have heard it
    assert result.cost.transcriptions == 10 and result.cost.audio_s == pytest.approx(300.0, abs=0.5)
    # The fact's own stretch of speech, as heard, is a retrieval hit from the start (a hit lies at its middle).
    heard = [
        (a, b, text)
        for (segments,) in rows(sqlite_url(tmp_path / "runs.db"), "SELECT segments FROM va_speech_chunks")
        for a, b, text in (json.loads(segments) if isinstance(segments, str) else segments)
    ]
    [(a, b)] = [(a, b) for a, b, text in heard if a <= at < b and "Maria" in text]
    assert round((a + b) / 2, 3) in {round(t, 3) for t, _ in result.state["hits"]}, sorted(result.state["hits"])
    assert result.answer == "Maria", result.reasoning


def test_videoseek_starts_from_the_whole_track_as_from_a_subtitle_file(
    talk: tuple[Talk, Path, EndpointSettings], tmp_path: Path
) -> None:
    said_at(talk[0])
    result = ask(talk, tmp_path, "videoseek")
    # Every chunk is heard before the first turn, and the planner, told what is said, answers without a tool:
    # a planner that had heard nothing yet would have looked first.
    assert result.cost.transcriptions == 10 and result.cost.audio_s == pytest.approx(300.0, abs=0.5)
    assert result.rounds == 0 and result.stop_reason == "the planner answered", result.stop_reason
    assert result.answer == "Maria", result.reasoning
