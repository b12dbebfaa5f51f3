"""VideoARM end to end on the stand-in: a question only the speech answers, one only the pixels answer.

The stand-in perceives: it reads the mosaics' pixels, and the transcript only once audio_transcriber
has put it into the controller's memory (its ears are Whisper tiny.en on the spoken track that
espeak-ng made). The runs are then read back as ``trace`` and the run page show them, a run is
killed with SIGKILL and resumed. Which tools the controller calls and what it answers are the
stand-in's choices; the tools and the memory are checked with a scripted controller in ``test_videoarm.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from markupsafe import escape
from sqlalchemy.exc import DBAPIError

from db_helpers import rows, sqlite_url
from process_helpers import EXE
from videoatlas.inspect import load_trace, trace_lines
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import RunResult, run_question
from videoatlas.runtime.config import RunConfig
from videoatlas.synth.speech import QUESTIONS, write_speech_video
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = pytest.mark.e2e
SPOKEN, SHOWN = QUESTIONS[0], QUESTIONS[1]


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_speech_video(tmp_path_factory.mktemp("arm_e2e") / "speech.mp4")


@pytest.fixture(scope="module")
def runs(video: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, RunResult]]]:
    """The spoken and the shown question as VideoARM answers them.

    Mosaics at 160 px instead of 256 keep the stand-in's reading quick; its cards read at either size.
    """
    db = sqlite_url(tmp_path_factory.mktemp("arm_db") / "arm.db")
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        endpoint = EndpointSettings(base_url=server.base_url, model="")

        async def each() -> dict[str, RunResult]:
            out = {}
            for q in (SPOKEN, SHOWN):
                config = RunConfig.of(agent="videoarm", snap_px=160)
                out[q.sense] = await run_question(video, q.question, list(q.choices), config, endpoint, db_url=db)
            return out

        yield db, asyncio.run(each())


def test_both_questions_run_to_an_answer_with_looks_and_hearings_inside_the_video(
    runs: tuple[str, dict[str, RunResult]],
) -> None:
    """Which tools the controller calls, and what it answers, are the stand-in's choices: what a whole run over
    HTTP guarantees is checked here (the tools' mechanics, with a scripted controller, in ``test_videoarm.py``)."""
    _, results = runs
    for q in (SPOKEN, SHOWN):
        result = results[q.sense]
        assert result.answer in q.choices and result.stop_reason, (q.sense, result.state["memory"])
        memory = result.state["memory"]
        assert result.cost.calls >= len(memory) + 1  # a controller step per tool call, and the answer
        assert {e.tool for e in memory} <= {"scene_snapper", "clip_analyzer", "audio_transcriber"}
        for entry in memory:
            assert all(0.0 <= a <= b <= 24.0 for a, b in entry.ranges), entry
            assert all(0.0 <= h.start <= h.end <= 24.5 for h in entry.heard), entry
            if entry.tool == "scene_snapper":
                assert len(entry.frames) <= 96 and entry.mosaics == -(-len(entry.frames) // 6)
        snapped = {f for e in memory if e.tool != "audio_transcriber" for f in e.frames}
        assert result.cost.frames_viewed == len(snapped)


def test_trace_and_the_run_page_show_each_steps_tool_reason_mosaics_and_transcript(
    runs: tuple[str, dict[str, RunResult]],
) -> None:
    from videoatlas.ui.report import report_html

    db, results = runs
    for result in results.values():
        trace = asyncio.run(load_trace(result.run_id, db))
        steps = trace["detail"]["steps"]
        assert [s["tool"] for s in steps] == [e.tool for e in result.state["memory"]]
        shown = trace_lines(trace)
        assert shown[0].startswith(f"run {result.run_id} [finished] (videoarm)")
        assert sum(line.strip().startswith("Step ") for line in shown) == len(steps), shown
        assert sum(line.strip().startswith("reason:") for line in shown) == len(steps)
        page = asyncio.run(report_html(result.run_id, db))
        turns = [t.split("</section>")[0] for t in page.split('<section class="turn box">')[1:]]
        assert len(turns) == len(steps)
        for step, turn in zip(steps, turns, strict=True):
            assert step["tool"] in turn
            assert turn.count('class="zoomable thumb"') == len(step["images"])  # the mosaics its call showed
            if step["tool"] == "audio_transcriber":
                assert not step["images"]
        # The page escapes what it shows (a reason may quote the prompt's "relation" and its values).
        assert all(f"<b>Thought:</b> {escape(s['reason'])}" in t for s, t in zip(steps, turns, strict=True))


def _env(tmp: Path) -> dict[str, str]:
    return {
        **os.environ,
        "VIDEOATLAS_HOME": str(tmp / "home"),
        "VIDEOATLAS_LEASE_HEARTBEAT": "0.5",
        "VIDEOATLAS_LEASE_TIMEOUT": "1.5",
    }


def _ask(video: Path, *extra: str) -> list[str]:
    """``videoatlas ask`` of the spoken question with VideoARM."""
    args = [EXE, "ask", str(video), "-q", SPOKEN.question, "--agent", "videoarm", "--snap-px", "160", "--json", *extra]
    for choice in SPOKEN.choices:
        args += ["-c", choice]
    return args


@pytest.mark.slow
def test_kill_9_mid_run_then_resume_gives_the_same_answer(
    video: Path, runs: tuple[str, dict[str, RunResult]], tmp_path: Path
) -> None:
    """Killed after its first controller call (its in-process stand-in dies with it); ``resume`` starts a stand-in
    of its own and finishes the run to the answer the uninterrupted run gave with the same settings."""
    env = _env(tmp_path)
    db = sqlite_url(tmp_path / "runs.db")
    proc = subprocess.Popen(
        [*_ask(video, "--standin"), "--db", db], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    deadline = time.monotonic() + 120
    run_id = None
    while time.monotonic() < deadline and proc.poll() is None and run_id is None:
        try:  # the first controller step is recorded: its tool call is under way
            found = rows(db, "SELECT run_id FROM va_model_calls")
        except DBAPIError:
            found = []
        run_id = found[0][0] if found else None
        time.sleep(0.02)
    assert run_id is not None and proc.poll() is None, "the run ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    time.sleep(2.0)  # past the lease timeout: the run is stale, no longer owned
    resumed = subprocess.run([EXE, "resume", run_id, "--db", db, "--json"], capture_output=True, text=True, env=env)
    assert resumed.returncode == 0, resumed.stderr
    # The same answer as the run that was never interrupted (in the module's runs, with the same settings).
    assert json.loads(resumed.stdout)["answer"] == runs[1]["speech"].answer
    assert rows(db, "SELECT status FROM va_runs WHERE id = :r", r=run_id) == [("finished",)]
