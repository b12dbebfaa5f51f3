"""VideoARM counts on the stand-in: its survey is as dense as the endpoint's image limit lets it be.

A 320 s video shows an OSPREY badge three times, 3 s each, all between the frames of a 30-frame
survey (10.7 s apart) and each on at least one frame of a 90- or 150-frame one. The controller
chooses how many frames to survey; asked how many times, it takes the most the endpoint takes in one
prompt (90 on vLLM's default of 16 images, 150 once the endpoint says it takes 25) and counts three.
Before, it always surveyed 30 frames and saw none; and 150 frames, 25 mosaics, could not be sent.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from action_video import Sign, write_signs_video
from db_helpers import sqlite_url
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import RunResult, run_question
from videoatlas.runtime.config import RunConfig
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = pytest.mark.e2e
BADGE = (20, 90, 150)
SIGNS = tuple(Sign(t, t + 3.0, "OSPREY", 52, 320, 180, card=BADGE) for t in (8.0, 150.0, 264.0))
QUESTION = "How many times does the OSPREY badge appear in the video?"
CHOICES = ["1", "2", "3", "4"]


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_signs_video(tmp_path_factory.mktemp("arm_counts") / "osprey.mp4", SIGNS, 320.0)


def answer(video: Path, db: str, max_images: int) -> RunResult:
    with RunningServer(StandinServer(StandinConfig(max_images=max_images), reader=Reader())) as server:
        endpoint = EndpointSettings(base_url=server.base_url, model="", max_images=max_images)
        config = RunConfig.of(agent="videoarm", snap_px=160)
        return asyncio.run(run_question(video, QUESTION, CHOICES, config, endpoint, db_url=db))


@pytest.mark.parametrize(("max_images", "frames"), [(16, 90), (25, 150)])
def test_a_count_is_surveyed_as_densely_as_the_endpoint_allows(
    video: Path, tmp_path: Path, max_images: int, frames: int
) -> None:
    result = answer(video, sqlite_url(tmp_path / "runs.db"), max_images)
    first = result.state["memory"][0]
    assert first.tool == "scene_snapper" and len(first.frames) == frames
    assert first.mosaics == frames // 6
    assert result.answer == "3", result.state["memory"]
    assert result.cost.frames_viewed >= frames
