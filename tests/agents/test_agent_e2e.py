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


async def test_needle_question_is_answered_from_pixels(
    synth_video: tuple[Path, dict[str, Any]], shared_reader: Reader
) -> None:
    video, truth = synth_video
    question = next(q for q in truth["questions"] if q["kind"] == "needle_in_chapter")
    events: list[dict[str, Any]] = []
    with RunningServer(StandinServer(StandinConfig(), reader=shared_reader)) as server:
        endpoint = EndpointSettings(base_url=server.base_url, model="")
        result = await run_question(
            video, question["question"], question["choices"], RunConfig.of(), endpoint, on_progress=events.append
        )
        stats = server.standin.stats.as_dict()
    assert result.answer == question["answer"]
    needle = question["evidence"][0]
    assert any(needle[0] - 0.5 <= e.time <= needle[1] + 0.5 for e in result.evidence)
    assert result.cost.calls == stats["completed"] and result.cost.prompt_tokens == stats["prompt_tokens"]
    assert result.cost.cached_tokens == stats["cached_tokens"]
    kinds = {e["event"] for e in events}
    assert {"search_task_done", "assign", "worker_step", "worker_done", "round_done", "answer"} <= kinds
    for record in result.records:
        assert record.meta["prompt_set"] == "default" and ":" in record.meta["template"]


@pytest.mark.parametrize("kind", ["counting", "order"])
async def test_a_count_or_an_order_of_things_shorter_than_a_root_cell_is_settled_from_evidence(
    synth_video: tuple[Path, dict[str, Any]], shared_reader: Reader, kind: str
) -> None:
    """The badges and words stay 4 s on screen; a 4x4 root grid of the 180-s video has frames 11.25 s apart.

    The BFS scan takes the finest step one round of workers affords (2.8 s: four grids), so every
    appearance is seen; before, it covered the timeline at the 16 s cap with one look at the root grid's
    frames, marked everything explored, and answered without evidence.
    """
    video, truth = synth_video
    question = next(q for q in truth["questions"] if q["kind"] == kind)
    with RunningServer(StandinServer(StandinConfig(), reader=shared_reader)) as server:
        endpoint = EndpointSettings(base_url=server.base_url, model="")
        cfg = RunConfig.of(k=4)
        result = await run_question(video, question["question"], question["choices"], cfg, endpoint)
    assert result.answer == question["answer"] and result.cited
    round1 = [e for e in result.evidence if e.round == 1]
    for start, end in question["evidence"]:  # each appearance asked about is in the evidence
        assert any(start - 0.5 <= e.time <= end + 0.5 for e in round1), (start, end)


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
    assert result["answer"] == question["answer"]
    assert result["cost"]["calls"] > 0 and result["evidence"]
    assert all({"label", "time", "interval", "description"} <= set(e) for e in result["evidence"])


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
