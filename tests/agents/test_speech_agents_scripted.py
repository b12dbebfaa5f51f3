"""Every agent hears the video, with a scripted model: what is only said reaches the model and grounds the answer.

The speech video (:mod:`videoatlas.synth.speech`: espeak-ng says "the night train tonight goes to
Bristol" at 1 s, the name is never shown) is heard through the stand-in's transcription route (Whisper
tiny.en) and, for EEA's index, its embeddings route; the model is scripted. What each agent does with
what is said is checked from what its model was shown and what its result records, whichever answer
a model would pick. (The stand-in's own answers to these questions are its choice: ``test_speech_agents_e2e.py``
runs every agent on them over HTTP and checks only what the run machinery guarantees.)
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_helpers import ScriptedChat, default_reply, step
from db_helpers import sqlite_url
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import RunResult, run_question
from videoatlas.runtime.config import RunConfig
from videoatlas.synth.speech import QUESTIONS, write_speech_video
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas_standin.version import STANDIN_MODEL

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
SPOKEN, SHOWN = QUESTIONS[0], QUESTIONS[1]
"""The night train's city (Bristol: only said), and the city on the DEPARTURES board (only shown)."""
SAID = "goes to Bristol"
"""What is said (the choices name the city too: the words around it are heard, never shown or asked)."""
CELL_SAID = re.compile(r"^cell (\d+)(?: to cell \d+)?: .*" + SAID, re.M | re.I)
"""A line of what is said by cell (``cell 3 to cell 9: ...``) that holds the spoken answer."""
LABEL_SAID = re.compile(r"^\[([A-Z]+)\][^\n]*" + SAID, re.M | re.I)
"""A labelled evidence line, in a final decision's prompt, that holds the spoken answer."""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, EndpointSettings]]:
    """The video, one run store (the speech is heard once, then read from it), the stand-in's routes."""
    root = tmp_path_factory.mktemp("speech_scripted")
    video = write_speech_video(root / "speech.mp4")
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield video, sqlite_url(root / "runs.db"), EndpointSettings(base_url=server.base_url, model=STANDIN_MODEL)


def final(question: Any, text: str, schema: dict[str, Any], cite: bool = True) -> dict[str, Any]:
    """A final decision that picks the right choice and cites the evidence lines that hold the spoken answer."""
    labels = LABEL_SAID.findall(text) if cite else []
    answer = question.choices.index(question.answer)
    return {**default_reply("FinalDecision", text, schema), "answer": answer, "evidence": labels}


def script_for(agent: str, question: Any) -> Callable[[str, str, dict[str, Any]], Any]:
    """A model for ``agent`` that takes one plain path to the answer: no choice of it depends on what it is shown."""
    steps = {"ControllerStep": 0}

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "FinalDecision":
            return final(question, text, schema)
        if name == "GlobalProbe":  # the root cells during which the answer is said first
            n = schema["properties"]["cells"]["minItems"]
            said = [int(c) for c in CELL_SAID.findall(text)]
            return {"cells": [*said, *(c for c in range(16) if c not in said)][:n], "reason": "said there"}
        if name == "WorkerStep":
            said = CELL_SAID.findall(text)
            if said and "(nothing yet)" in text:
                item = {"cell": int(said[0]), "description": "the city is said here", "confidence": 0.9}
                return step("ADD_TO_SCRATCHPAD", [int(said[0])], [item])
            return step("FINISHED")
        if name == "PlannerTurn":
            return {"thought": "the track says it", "call": {"tool": "answer"}}
        if name == "ControllerStep":
            steps["ControllerStep"] += 1
            if steps["ControllerStep"] == 1:
                return {"reason": "listen first", "call": {"tool": "audio_transcriber", "ranges": []}}
            return {"reason": "heard it", "call": {"tool": "answer"}}
        if name == "SearchQueries":
            return {"search_queries": ["where the night train goes"]}
        if name == "SegmentRewards":
            reply: dict[str, Any] = {
                k: {"explanation": "x", "score": 50} for k in schema["properties"] if k != "anchor"
            }
            return {**reply, "anchor": []} if "anchor" in schema["properties"] else reply
        if name == "Selection":
            return {"thought": "enough", "step": {"action": "answer"}}
        return default_reply(name, text, schema)

    return script


def ask(
    world: tuple[Path, str, EndpointSettings], agent: str, question: Any, script: Any = None, **settings: Any
) -> tuple[RunResult, ScriptedChat]:
    video, db, endpoint = world
    chat = ScriptedChat(script=script or script_for(agent, question))
    config = RunConfig.of(agent=agent, **settings)
    result = asyncio.run(
        run_question(video, question.question, list(question.choices), config, endpoint, chat_model=chat, db_url=db)
    )
    return result, chat


SMALL: dict[str, dict[str, Any]] = {
    "video-rlm": {"k": 4, "cell_px": 64, "workers": 2, "rounds": 1, "traversal": "dfs"},
    "videoseek": {},
    "videoarm": {"snap_px": 96},
    "eea": {"expansions": 1, "index_fps": 0.5},
    "uniform": {"k": 2, "cell_px": 96, "frames": 4},
}


@pytest.mark.parametrize("agent", list(SMALL))
def test_what_is_only_said_reaches_every_agents_final_decision(
    world: tuple[Path, str, EndpointSettings], agent: str
) -> None:
    result, chat = ask(world, agent, SPOKEN, **SMALL[agent])
    [decision] = [text for name, text in chat.seen if name == "FinalDecision"]
    assert re.search(SAID, decision, re.I), (agent, decision)
    assert result.answer == SPOKEN.answer and result.cost.transcriptions + result.cost.calls > 0


def test_video_rlm_files_the_cell_where_it_is_said_with_the_words_and_the_decision_cites_it(
    world: tuple[Path, str, EndpointSettings],
) -> None:
    result, chat = ask(world, "video-rlm", SPOKEN, **SMALL["video-rlm"])
    assert any(CELL_SAID.search(text) for name, text in chat.seen if name == "WorkerStep")  # told by cell
    filed = [e for e in result.evidence if SAID.lower() in (e.subtitle or "").lower()]
    assert filed and all(0.0 <= e.start <= e.end <= 24.0 and 0.0 <= e.time <= 24.0 for e in filed), result.evidence
    assert result.grounded and {e.id for e in filed} <= set(result.cited)


def test_videoseek_reads_the_track_first_and_the_line_it_cites_is_its_evidence(
    world: tuple[Path, str, EndpointSettings],
) -> None:
    spoken, chat = ask(world, "videoseek", SPOKEN)
    first_turn = next(text for name, text in chat.seen if name == "PlannerTurn")
    assert re.search(SAID, first_turn, re.I)  # heard before any tool
    assert spoken.rounds == 0 and spoken.stop_reason == "the planner answered"
    said = [e for e in spoken.evidence if "said" in e.where]
    assert spoken.grounded and said and {e.id for e in said} <= set(spoken.cited)
    assert any(SAID.lower() in (e.subtitle or "").lower() for e in said)
    assert all(e.start <= e.time <= e.end for e in said)
    # A line the answer does not cite is no evidence: a question about what is shown rests on no line said.
    plain = script_for("videoseek", SHOWN)
    shown, _ = ask(
        world,
        "videoseek",
        SHOWN,
        lambda n, t, s: final(SHOWN, t, s, cite=False) if n == "FinalDecision" else plain(n, t, s),
    )
    assert not [e for e in shown.evidence if "said" in e.where] and not shown.cited
