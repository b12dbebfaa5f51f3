"""The whole agent over real HTTP against the stand-in VLM, on a generated video."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from process_helpers import bare_env
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import run_question
from videoatlas.runtime.context import RunConfig
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def shared_reader() -> Reader:
    return Reader()


async def test_a_question_over_http_is_answered_costed_traced_and_placed_in_the_video(
    synth_video: tuple[Path, dict[str, Any]], shared_reader: Reader
) -> None:
    """Video-RLM finishes a run over real HTTP: the cost it counts is what the server served, every node's
    progress event is sent, every call records its template, and the evidence lies inside the video.

    Which choice the stand-in picks and where it files evidence are its own: the agent's search and
    evidence placement are checked with a scripted model (``test_graph.py``, ``test_video_rlm_counting.py``).
    """
    video, truth = synth_video
    question = next(q for q in truth["questions"] if q["kind"] == "needle_in_chapter")
    events: list[dict[str, Any]] = []
    with RunningServer(StandinServer(StandinConfig(), reader=shared_reader)) as server:
        endpoint = EndpointSettings(base_url=server.base_url, model="")
        result = await run_question(
            video, question["question"], question["choices"], RunConfig.of(), endpoint, on_progress=events.append
        )
        stats = server.standin.stats.as_dict()
    assert result.answer in question["choices"] and result.stop_reason
    # Inside the video (a frame shown for a cell shorter than a frame began before it: its time may precede the cell).
    assert all(0.0 <= e.start <= e.end <= truth["duration"] and 0.0 <= e.time <= e.end for e in result.evidence)
    assert result.cost.calls == stats["completed"] and result.cost.prompt_tokens == stats["prompt_tokens"]
    assert result.cost.calls > 0 and result.cost.prompt_tokens > 0
    assert result.cost.cached_tokens == stats["cached_tokens"]
    kinds = {e["event"] for e in events}
    assert {"search_task_done", "assign", "worker_step", "worker_done", "round_done", "answer"} <= kinds
    for record in result.records:
        assert record.meta["prompt_set"] == "default" and ":" in record.meta["template"]


def test_ask_command_with_the_stand_in(synth_video: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    video, truth = synth_video
    question = next(q for q in truth["questions"] if q["kind"] == "needle_in_chapter")
    exe = str(Path(sys.executable).parent / "videoatlas")
    args = [exe, "ask", str(video), "-q", question["question"], "--standin", "--json"]
    for choice in question["choices"]:
        args += ["-c", choice]
    proc = subprocess.run(
        args,
        capture_output=True,
        text=True,
        timeout=600,
        env=bare_env(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["answer"] in question["choices"]
    assert result["cost"]["calls"] > 0
    probabilities = result["probabilities"]  # the server's, per choice, from the decision's logprobs
    assert len(probabilities) == len(question["choices"]) and sum(probabilities) == pytest.approx(1.0, abs=1e-3)
    assert result["confidence"] == probabilities[question["choices"].index(result["answer"])]
    assert all({"label", "time", "interval", "description"} <= set(e) for e in result["evidence"])
    assert all(0.0 <= e["time"] <= truth["duration"] for e in result["evidence"])


def test_ask_rejects_bad_input(synth_video: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    video, _ = synth_video
    exe = str(Path(sys.executable).parent / "videoatlas")
    for extra, fragment in (
        (["--workers", "0"], "--workers"),
        (["--bfs-cells", "0"], "--bfs-cells"),
        (["--max-depth", "deep"], "max depth must be"),
        (["--prompts", "nope"], "neither a built-in set"),
    ):
        proc = subprocess.run(
            [exe, "ask", str(video), "-q", "what?", *extra],
            capture_output=True,
            text=True,
            timeout=120,
            env=bare_env(tmp_path),
        )
        assert proc.returncode == 2, proc.stderr
        assert fragment in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run(
        [exe, "ask", str(video), "-q", "what?", "--base-url", "http://127.0.0.1:9/v1", "--timeout", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        env=bare_env(tmp_path),
    )
    assert proc.returncode == 5 and "cannot reach the VLM endpoint at http://127.0.0.1:9/v1" in proc.stderr
