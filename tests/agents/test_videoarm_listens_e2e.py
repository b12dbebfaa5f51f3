"""VideoARM on a video of its own whose answer is only spoken, asked without a verb of saying.

The question ("Where does the boat go ...?") does not say the answer is heard, so the stand-in
looks first; the cards show nothing that bears on it. With steps and an untried way of finding out
left (audio_transcriber, another sense), the controller must listen before it answers: the
stand-in's rule against ending without evidence while means remain, exercised through a whole run.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from videoatlas.agents.videoarm.settings import VideoArmSettings
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import run_question
from videoatlas.runtime.config import RunConfig
from videoatlas.synth.speech import HELD_OUT, HELD_OUT_CARDS, HELD_OUT_LINES, write_speech_video
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = pytest.mark.e2e

QUESTION = HELD_OUT[0]


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_speech_video(
        tmp_path_factory.mktemp("arm_listen") / "boat.mp4", cards=HELD_OUT_CARDS, lines=HELD_OUT_LINES
    )


def test_nothing_seen_then_it_listens_before_answering(video: Path) -> None:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        endpoint = EndpointSettings(base_url=server.base_url, model="")
        config = RunConfig.of(agent="videoarm", snap_px=160)
        result = asyncio.run(run_question(video, QUESTION.question, list(QUESTION.choices), config, endpoint))
    tools = [e.tool for e in result.state["memory"]]
    assert tools[0] == "scene_snapper", tools  # asked about a fact, not about speech: it looks first
    assert "audio_transcriber" in tools, tools  # nothing seen: it listens before it answers
    heard = next(e for e in result.state["memory"] if e.tool == "audio_transcriber")
    assert any("Dublin" in h.text for h in heard.heard), heard
    assert result.answer == QUESTION.answer == "Dublin" and result.grounded
    assert len(tools) < VideoArmSettings().steps - 1  # it ended by answering, not by the step limit
