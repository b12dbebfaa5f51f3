"""VideoSeek on our environment: one tool per turn, each tool's frame counts, sizes and span limits, narrowing.

Graph tests with a scripted planner check the mechanics from what was sent (images, their sizes,
the frames each call showed) and a stored run reads back turn by turn; an end-to-end run against the
stand-in checks what a whole run over HTTP guarantees (which tools it calls is the stand-in's choice).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from sqlalchemy.exc import DBAPIError

from action_video import Sign, write_signs_video
from agent_helpers import ScriptedChat, default_reply, make_context
from db_helpers import sqlite_url
from videoatlas.agents.videoseek.graph import build_graph
from videoatlas.inspect import load_trace, trace_lines
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import RunResult, run_question
from videoatlas.runtime.config import RunConfig
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

DURATION = 80.0  # the counter video: 320 x 240, 25 fps


def planner(calls: list[dict[str, Any]]) -> Any:
    """A scripted planner that makes ``calls`` in turn, then answers; tools describe nothing in particular."""
    turns = iter(calls)

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "PlannerTurn":
            return {"thought": "next", "call": next(turns, {"tool": "answer"})}
        if name in ("OverviewReport", "SkimReport"):
            reply: dict[str, Any] = {"frames": [{"id": 0, "description": "a counter"}], "summary": "counters"}
            return {**reply, "relevant": [1]} if name == "SkimReport" else reply
        if name == "FocusReport":
            return {"found": True, "description": "frame 2 shows it", "relevant": [2]}
        return default_reply(name, text, schema)

    return script


async def run(video: Path, tmp: Path, script: Any, **settings: Any) -> tuple[dict[str, Any], Any]:
    ctx, chat, source = make_context(video, tmp, script, RunConfig.of(agent="videoseek", **settings))
    try:
        out = await build_graph().ainvoke(
            {"question": "What number is shown?", "choices": ["one", "two"]},
            {"recursion_limit": 200},
            context=ctx,
        )
    finally:
        source.close()
    return out, chat


def sizes(chat: Any, call: int) -> list[tuple[int, int]]:
    return [Image.open(io.BytesIO(jpeg)).size for jpeg in chat.images[call]]


@pytest.mark.unit
async def test_one_tool_per_turn_with_the_papers_frame_counts_sizes_and_spans(
    counter_video: Path, tmp_path: Path
) -> None:
    calls: list[dict[str, Any]] = [
        {"tool": "overview"},
        {"tool": "skim", "query": "a seven", "start": 10.0, "end": 12.0},  # too short: widened to 8 s
        {"tool": "focus", "query": "the seven", "start": 40.0, "end": 20.0},  # backwards, too long: 8 s
    ]
    out, chat = await run(counter_video, tmp_path, planner(calls), alpha=2)
    names = [name for name, _ in chat.seen]
    tools = ["OverviewReport", "SkimReport", "FocusReport"]
    assert names == [step for tool in tools for step in ("PlannerTurn", tool)] + ["PlannerTurn", "FinalDecision"]
    planning = [i for i, name in enumerate(names) if name in ("PlannerTurn", "FinalDecision")]
    assert all(chat.images[i] == [] for i in planning)  # the planner never sees pixels
    overview, skim, focus = (names.index(n) for n in ("OverviewReport", "SkimReport", "FocusReport"))
    # overview: 16 alpha = 32 frames over the whole video, 8 to an image (4 x 2), short side 240 (the
    # source's, under 256), each frame under its caption strip.
    assert len(sizes(chat, overview)) == 4 and {w for w, _ in sizes(chat, overview)} == {4 * 320}
    assert all(h > 2 * 240 for _, h in sizes(chat, overview))
    first, second, third = out["turns"]
    assert len(first.frames) == 32 and first.frames[0] == pytest.approx(DURATION / 64, abs=0.04)
    # skim: 4 alpha = 8 frames over a span widened to 4 alpha = 8 s around the asked 10-12 s.
    assert (second.start, second.end) == (7.0, 15.0) and len(second.frames) == 8
    assert len(sizes(chat, skim)) == 1 and all(7.0 <= t <= 15.0 for t in second.frames)
    # focus: the span put forwards and cut to 8 s around its middle, one frame a second at full size.
    assert (third.start, third.end) == (26.0, 34.0) and len(third.frames) == 8
    assert sizes(chat, focus) == [(320, 240)] * 8
    assert [r.detail.split(" brought")[0] for r in out["repairs"]] == ["skim span 10-12 s", "focus span 40-20 s"]
    assert out["round"] == 3 and out["stop_reason"] == "the planner answered"
    # The frame ledger: 32 + 8 + 8 frames sent, all distinct moments.
    assert out["cost"].frames_sent == 48 and out["cost"].frames_viewed == 48
    assert third.relevant == [third.frames[2]] and [e.time for e in out["evidence"]] == [
        second.frames[1],
        third.frames[2],
    ]


@pytest.mark.unit
async def test_at_the_turn_limit_one_forced_answer(counter_video: Path, tmp_path: Path) -> None:
    out, chat = await run(counter_video, tmp_path, planner([{"tool": "overview"} for _ in range(10)]), turns=2)
    names = [name for name, _ in chat.seen]
    assert names.count("PlannerTurn") == 2 and names[-1] == "FinalDecision"
    assert out["stop_reason"] == "2 turns done: answer forced" and out["round"] == 2


SMALL_PRINT = (
    Sign(100.0, 130.0, "HARBOR", 56, 320, 70, card=(20, 60, 140)),
    Sign(112.0, 117.0, "tag QZ-7781", 9, 320, 300),  # legible at full size, not at 256 px
)
QUESTION = "Which tag is printed in small type under the HARBOR banner?"
CHOICES = ["QZ-1234", "QZ-7781", "MT-7781"]


@pytest.fixture(scope="module")
def small_print(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_signs_video(tmp_path_factory.mktemp("seek") / "small_print.mp4", SMALL_PRINT, 240.0)


@pytest.fixture(scope="module")
def standin() -> Iterator[RunningServer]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield server


@pytest.mark.e2e
async def test_a_question_over_http_runs_its_turns_inside_the_video_and_reads_back_turn_by_turn(
    small_print: Path, standin: RunningServer, tmp_path: Path
) -> None:
    """Which tools the planner calls, and where, is the stand-in's choice; a whole run over HTTP keeps each tool's
    span inside the video and counts every frame it sent, and ``trace`` reads it back turn by turn."""
    endpoint = EndpointSettings(base_url=standin.base_url, model="")
    db = sqlite_url(tmp_path / "seek.db")
    result = await run_question(small_print, QUESTION, CHOICES, RunConfig.of(agent="videoseek"), endpoint, db_url=db)
    assert result.answer in CHOICES and result.stop_reason
    turns = result.state["turns"]
    for t in turns:
        assert t.tool in ("overview", "skim", "focus") and all(0.0 <= f <= 240.0 for f in t.frames)
        if t.tool != "overview":
            assert t.start is not None and t.end is not None and 0.0 <= t.start < t.end <= 240.0
    assert result.cost.frames_sent == sum(len(t.frames) for t in turns) >= result.cost.frames_viewed
    await assert_read_back_turn_by_turn(result, db)


async def assert_read_back_turn_by_turn(result: RunResult, db: str) -> None:
    """``trace`` reads the run back turn by turn, in VideoSeek's own terms."""
    trace = await load_trace(result.run_id, db)
    turns = result.state["turns"]
    assert [t["tool"] for t in trace["detail"]["turns"]] == [t.tool for t in turns]
    shown = trace_lines(trace)
    assert shown[0].startswith(f"run {result.run_id} [finished] (videoseek)")
    assert sum(line.strip().startswith("Turn ") for line in shown) == len(turns), shown


@pytest.mark.e2e
async def test_a_stored_run_reads_back_turn_by_turn(counter_video: Path, tmp_path: Path) -> None:
    """A planner that narrows (overview, skim, focus), stored and read back as ``trace``."""
    calls: list[dict[str, Any]] = [
        {"tool": "overview"},
        {"tool": "skim", "query": "a seven", "start": 20.0, "end": 36.0},
        {"tool": "focus", "query": "the seven", "start": 26.0, "end": 30.0},
    ]
    db = sqlite_url(tmp_path / "seek.db")
    chat = ScriptedChat(script=planner(calls))
    config = RunConfig.of(agent="videoseek")
    result = await run_question(
        counter_video, "What number is shown?", ["one", "two"], config, EndpointSettings(model="scripted"),
        chat_model=chat, db_url=db,
    )  # fmt: skip
    assert [t.tool for t in result.state["turns"]] == ["overview", "skim", "focus"]
    assert result.cost.frames_viewed == sum(len(t.frames) for t in result.state["turns"])
    await assert_read_back_turn_by_turn(result, db)


@pytest.mark.e2e
async def test_an_agent_without_its_own_trace_view_reads_back_as_its_node_timeline(
    small_print: Path, standin: RunningServer, tmp_path: Path
) -> None:
    endpoint = EndpointSettings(base_url=standin.base_url, model="")
    db = sqlite_url(tmp_path / "uniform.db")
    result = await run_question(small_print, QUESTION, CHOICES, RunConfig.of(agent="uniform"), endpoint, db_url=db)
    trace = await load_trace(result.run_id, db)
    assert trace["agent"] == "uniform" and trace["detail"] == {}
    answered = [event for event in trace["timeline"] if event["calls"]]
    assert [(e["node"], e["calls"]) for e in answered] == [("answer_uniform", 1)]
    shown = trace_lines(trace)
    assert shown[0].startswith(f"run {result.run_id} [finished] (uniform)")
    assert any(line.startswith("  answer_uniform: ") and ", 1 call(s), " in line for line in shown), shown
    from videoatlas.ui.report import report_html

    page = await report_html(result.run_id, db)
    assert "<b>answer_uniform</b>: " in page and "1 call(s)" in page
    assert 'class="zoomable thumb" src="data:image/jpeg;base64,' in page  # the frames the call sent


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize(
    "agent",
    [
        ["--agent", "videoseek"],
        # EEA, with a small index and one round: its frame index is built (and stored) before the kill.
        ["--agent", "eea", "--index-fps", "0.05", "--expansions", "1"],
    ],
    ids=lambda a: a[1],
)
def test_kill_9_mid_run_then_resume_gives_the_same_answer(small_print: Path, tmp_path: Path, agent: list[str]) -> None:
    from db_helpers import rows
    from process_helpers import EXE, StandIn

    # Short leases: the killed process's lease goes stale 1.5 s after its last heartbeat.
    env = {
        **os.environ,
        "VIDEOATLAS_HOME": str(tmp_path / "home"),
        "VIDEOATLAS_LEASE_HEARTBEAT": "0.5",
        "VIDEOATLAS_LEASE_TIMEOUT": "1.5",
    }
    args = [EXE, "ask", str(small_print), "-q", QUESTION, *agent, "--json"]
    for choice in CHOICES:
        args += ["-c", choice]
    server = StandIn(latency=1.0)
    try:
        url = ["--base-url", server.url + "/v1"]
        reference = subprocess.run(
            [*args, *url, "--db", sqlite_url(tmp_path / "ref.db")], capture_output=True, text=True, env=env
        )
        assert reference.returncode == 0, reference.stderr
        expected = json.loads(reference.stdout)
        repeats = server.stats()["repeated_completions"]  # calls the run itself makes twice (the model's choice)
        db = sqlite_url(tmp_path / "runs.db")
        server.reset()
        proc = subprocess.Popen([*args, *url, "--db", db], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        deadline = time.monotonic() + 120
        run_id, done = None, 0
        while time.monotonic() < deadline and proc.poll() is None and done < 1:
            try:
                found = rows(db, "SELECT run_id, count(*) FROM va_model_calls GROUP BY run_id")
            except DBAPIError:  # the tables are not there yet
                found = []
            if found:
                run_id, done = found[0][0], int(found[0][1])
            time.sleep(0.05)
        # One call recorded (a run of two calls at least, each taking a second): the next is in flight at the kill.
        assert run_id is not None and done >= 1 and proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        time.sleep(2.0)  # past the lease timeout: the run is stale, no longer owned
        resumed = subprocess.run([EXE, "resume", run_id, "--db", db, "--json"], capture_output=True, text=True, env=env)
        stats = server.stats()
    finally:
        server.stop()
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)
    assert result["answer"] == expected["answer"]  # the answer of a run never interrupted, with the same settings
    # One call at a time: at most the call in flight at the kill was sent again.
    assert stats["repeated_completions"] <= repeats + 1
    assert stats["completed"] <= expected["cost"]["calls"] + 1
