"""Every agent hears the video over HTTP: with no subtitle file, the speech track is transcribed once for all runs.

The stand-in's ears are a real speech model (Whisper tiny.en) on a track espeak-ng spoke
(:mod:`videoatlas.synth.speech`): three facts are only said, one only shown. Each agent runs all
four through ``run_question`` on one run store, the stand-in recording every request it gets. The
video's one chunk of speech is transcribed once, by the first run: every later run, whatever its
agent, reads it from the store and sends no audio. What an agent does with what it heard (told to its
model, filed as evidence, cited) is checked with a scripted model in ``test_speech_agents_scripted.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from db_helpers import sqlite_url
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import RunResult, run_question
from videoatlas.runtime import speech as speech_module
from videoatlas.runtime.config import RunConfig
from videoatlas.synth.speech import QUESTIONS, write_speech_video
from videoatlas_standin import record
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
AGENTS = {
    "video-rlm": {},
    "videoseek": {},
    "videoarm": {"snap_px": 160},
    "eea": {},
    "uniform": {},
}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, EndpointSettings, Path]]:
    root = tmp_path_factory.mktemp("speech_agents")
    # As a new process: another test file on this worker may have heard the same spoken video, and this process's
    # memory of its track would spare these runs the one transcription they are checked for.
    speech_module.forget()
    video = write_speech_video(root / "speech.mp4")
    log = root / "requests.jsonl"
    with RunningServer(StandinServer(StandinConfig(record=log), reader=Reader())) as server:
        yield video, sqlite_url(root / "runs.db"), EndpointSettings(base_url=server.base_url, model=""), log


def audio_requests(log: Path) -> int:
    """Transcription requests that carried audio, as the stand-in recorded them."""
    if not log.is_file():
        return 0
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return sum(1 for r in lines if r["endpoint"] == record.TRANSCRIPTIONS and r.get("files"))


@pytest.fixture(scope="module")
def answered(world: tuple[Path, str, EndpointSettings, Path]) -> dict[str, list[tuple[RunResult, int]]]:
    """Each agent's result on each question, with the audio requests the stand-in had got after it."""
    video, db, endpoint, log = world

    async def every() -> dict[str, list[tuple[RunResult, int]]]:
        out: dict[str, list[tuple[RunResult, int]]] = {}
        for agent, settings in AGENTS.items():
            for q in QUESTIONS:
                config = RunConfig.of(agent=agent, **settings)
                result = await run_question(video, q.question, list(q.choices), config, endpoint, db_url=db)
                out.setdefault(agent, []).append((result, audio_requests(log)))
        return out

    return asyncio.run(every())


@pytest.mark.parametrize("agent", list(AGENTS))
def test_every_agent_runs_every_question_to_an_answer_over_http(
    answered: dict[str, list[tuple[RunResult, int]]], agent: str
) -> None:
    """Each agent finishes each question against the stand-in; its evidence lies inside the 24 s video.

    Which choice it ends on is the stand-in's: what each agent does with what is only said is checked with
    a scripted model (``test_speech_agents_scripted.py``).
    """
    for q, (result, _) in zip(QUESTIONS, answered[agent], strict=True):
        assert result.answer in q.choices and result.stop_reason, (agent, q.question, result.reasoning)
        assert result.cost.calls > 0 and result.cost.prompt_tokens > 0
        # The server's probability of each choice, read from the decision's logprobs: a distribution over them.
        assert result.probabilities is not None and len(result.probabilities) == len(q.choices)
        assert sum(result.probabilities) == pytest.approx(1.0, abs=1e-3) and min(result.probabilities) >= 0
        assert result.answer_index is not None and result.confidence == result.probabilities[result.answer_index]
        inside = all(0.0 <= e.start <= e.end <= 24.0 and 0.0 <= e.time <= 24.0 for e in result.evidence)
        assert inside, (agent, result.evidence)


def test_the_speech_is_transcribed_once_for_every_run_and_agent(
    answered: dict[str, list[tuple[RunResult, int]]],
) -> None:
    runs = [pair for agent in AGENTS for pair in answered[agent]]
    assert [sent for _, sent in runs] == [1] * len(runs)  # the first run's one request, and none after it
    first, *later = [result.cost for result, _ in runs]
    assert first.transcriptions == 1 and first.audio_s == pytest.approx(24.0, abs=0.1) and first.transcribe_s > 0
    assert all(c.transcriptions == 0 and c.audio_s == 0.0 for c in later)


def test_trace_and_run_page_show_what_listening_cost(
    world: tuple[Path, str, EndpointSettings, Path], answered: dict[str, list[tuple[RunResult, int]]]
) -> None:
    from videoatlas.inspect import load_trace, trace_lines
    from videoatlas.ui.report import report_html

    _, db, _, _ = world
    first, _ = answered["video-rlm"][0]
    shown = trace_lines(asyncio.run(load_trace(first.run_id, db)))
    assert "  speech: 24.0 s of audio transcribed in 1 request(s), " in "\n".join(shown)
    assert "s of audio transcribed in 1 request(s)" in asyncio.run(report_html(first.run_id, db))
    later, _ = answered["uniform"][0]
    assert not any(
        line.strip().startswith("speech:") for line in trace_lines(asyncio.run(load_trace(later.run_id, db)))
    )


def test_eea_anchors_its_queries_on_what_is_said_beside_the_frames(
    world: tuple[Path, str, EndpointSettings, Path], answered: dict[str, list[tuple[RunResult, int]]]
) -> None:
    from db_helpers import rows

    _, db, _, _ = world
    [(segments,)] = rows(db, "SELECT segments FROM va_speech_chunks")
    middles = {round((a + b) / 2, 3) for a, b, _ in (json.loads(segments) if isinstance(segments, str) else segments)}
    result, _ = answered["eea"][0]  # the spoken question about the night train
    hit_times = {round(t, 3) for t, _ in result.state["hits"]}
    assert middles & hit_times, (middles, sorted(hit_times))
