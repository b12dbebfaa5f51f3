"""EEA and VideoSeek read the whole speech track at their start, as a subtitle file or a frame index is read.

A five-minute long talk (:mod:`videoatlas.synth.long_talk`: routine announcements and facts said
once, spoken by espeak-ng, heard by the stand-in's Whisper tiny.en) has ten 30 s chunks. A first
look at the whole video hears only its middle chunk; EEA's start (to match its queries against, as
it matches them against the frame index) and VideoSeek's planner (which starts from the subtitles
when there is a file) hear all ten, so a fact said away from the middle is known from the start.

The runs against the stand-in check what the machinery guarantees (every chunk heard, a run that
finishes); with a scripted model, what the agent does with what it heard (EEA's hits, VideoSeek's
first turn), whatever a model would choose.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_helpers import ScriptedChat, default_reply
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
from videoatlas_standin.version import STANDIN_MODEL

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
CHOICES = ("Maria", "Peter", "Sofia", "James")
"""The choices of the question about the driver."""


@pytest.fixture(scope="module")
def talk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Talk, Path, EndpointSettings]]:
    talk = long_talk(300.0)
    root = tmp_path_factory.mktemp("track_read_first")
    video = speech.write_speech_video(root / "talk.mp4", cards=talk.cards, lines=talk.lines, duration=300.0)
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield talk, video, EndpointSettings(base_url=server.base_url, model="")


def ask(
    talk: tuple[Talk, Path, EndpointSettings],
    tmp_path: Path,
    agent: str,
    chat: ScriptedChat | None = None,
    **settings: int,
) -> RunResult:
    """The question about the driver, on a run store of its own, as a new process would ask it."""
    said, video, endpoint = talk
    [question] = [q for q in said.questions if q.answer == "Maria"]
    forget_speech()  # nothing heard by an earlier test is remembered in memory
    config = RunConfig.of(agent=agent, **settings)
    db = sqlite_url(tmp_path / "runs.db")
    if chat is not None:  # a scripted model; the stand-in still hears (and, for EEA's index, embeds)
        endpoint = dataclasses.replace(endpoint, model=STANDIN_MODEL)
    return asyncio.run(
        run_question(video, question.question, list(question.choices), config, endpoint, db_url=db, chat_model=chat)
    )


def said_at(said: Talk) -> float:
    at = said.said_at[[q.answer for q in said.questions].index("Maria")]
    assert int(at // CHUNK_S) != chunk_count(said.duration) // 2  # a first look at the whole video would not hear it
    return at


def heard_lines(tmp_path: Path) -> list[tuple[float, float, str]]:
    """Every stretch of speech the run store holds, as heard: (start, end, text)."""
    return [
        (a, b, text)
        for (segments,) in rows(sqlite_url(tmp_path / "runs.db"), "SELECT segments FROM va_speech_chunks")
        for a, b, text in (json.loads(segments) if isinstance(segments, str) else segments)
    ]


def test_eea_hears_every_chunk_at_its_start(talk: tuple[Talk, Path, EndpointSettings], tmp_path: Path) -> None:
    said_at(talk[0])
    result = ask(talk, tmp_path, "eea", expansions=1)  # one round: the start must have heard it
    assert result.cost.transcriptions == 10 and result.cost.audio_s == pytest.approx(300.0, abs=0.5)
    assert result.answer in CHOICES and result.stop_reason


def test_videoseek_starts_from_the_whole_track_as_from_a_subtitle_file(
    talk: tuple[Talk, Path, EndpointSettings], tmp_path: Path
) -> None:
    said_at(talk[0])
    result = ask(talk, tmp_path, "videoseek")
    # Every chunk is heard before the run ends, whatever the planner does.
    assert result.cost.transcriptions == 10 and result.cost.audio_s == pytest.approx(300.0, abs=0.5)
    assert result.answer in CHOICES and result.stop_reason


DRIVER = re.compile(r"driver today is Maria", re.I)
"""The fact as it is said (the choices name Maria too: the words around the name are only heard)."""


def answering(name: str, text: str, schema: dict[str, Any]) -> Any:
    """A model that asks for the driver and answers at once (Maria, choice 0), citing nothing."""
    if name == "SearchQueries":
        return {"search_queries": ["who is the driver today"]}
    if name == "SegmentRewards":
        reply: dict[str, Any] = {k: {"explanation": "x", "score": 50} for k in schema["properties"] if k != "anchor"}
        return {**reply, "anchor": []} if "anchor" in schema["properties"] else reply
    if name == "Selection":
        return {"thought": "enough", "step": {"action": "answer"}}
    if name == "PlannerTurn":
        return {"thought": "the track says it", "call": {"tool": "answer"}}
    return default_reply(name, text, schema)


def test_eea_anchors_where_a_fact_said_away_from_the_middle_is_said_from_its_start(
    talk: tuple[Talk, Path, EndpointSettings], tmp_path: Path
) -> None:
    """With a scripted model asking for the driver: the fact's own stretch of speech, heard at the start (one
    round), is a retrieval hit (a hit lies at its middle), and the answer is told what was said."""
    at = said_at(talk[0])
    chat = ScriptedChat(script=answering)
    result = ask(talk, tmp_path, "eea", chat, expansions=1)
    [(a, b)] = [(a, b) for a, b, text in heard_lines(tmp_path) if a <= at < b and "Maria" in text]
    assert round((a + b) / 2, 3) in {round(t, 3) for t, _ in result.state["hits"]}, sorted(result.state["hits"])
    assert DRIVER.search(next(t for n, t in chat.seen if n == "FinalDecision"))


def test_videoseeks_planner_is_told_the_whole_track_before_its_first_turn(
    talk: tuple[Talk, Path, EndpointSettings], tmp_path: Path
) -> None:
    """A planner told what is said can answer without a tool: one that had heard nothing yet would have to look."""
    said_at(talk[0])
    chat = ScriptedChat(script=answering)
    result = ask(talk, tmp_path, "videoseek", chat)
    first_turn = next(t for n, t in chat.seen if n == "PlannerTurn")
    assert DRIVER.search(first_turn), first_turn
    assert result.rounds == 0 and result.stop_reason == "the planner answered", result.stop_reason
    assert result.cost.transcriptions == 10
