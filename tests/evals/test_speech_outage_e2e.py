"""An EEA eval that listens rides out endpoint restarts in the middle of its embedding and transcription requests.

EEA embeds the video's frames and the queries, and with ``--speech full`` transcribes the speech
track: requests to the embeddings and transcription routes, besides chat. The eval runs as the
``videoatlas`` command on a video with a spoken track; the stand-in runs as its own process,
recording every request it receives. The stand-in is killed (as a vLLM that runs out of memory or
is preempted: no goodbye, every connection dropped) the moment the first frame reaches its
embeddings route, and again the moment the audio reaches its transcription route, and each time
started again on its port after longer than a request's whole retry budget. Every question is
answered in this one invocation, none twice, with no traceback.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from db_helpers import rows, sqlite_url
from process_helpers import EXE
from videoatlas.evals.items import EvalItem, write_items
from videoatlas.evals.runner import read_rows
from videoatlas.synth.speech import QUESTIONS, write_speech_video
from videoatlas_standin import record

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

AWAY_S = 10.0
"""How long the endpoint is away each time: past a request's retry budget (4 retries, 0.5 s doubling: 7.5 s)."""
PATIENCE_S = 60.0
MODEL = "standin-restarted"


class RecordingStandIn:
    """The stand-in as its own process on ``port``, appending every request it receives to ``log``."""

    def __init__(self, port: int, log: Path) -> None:
        self.port, self.log = port, log
        self.url = f"http://127.0.0.1:{port}"
        # A model id of its own: the stand-in's default id follows its sources, which a restart must not change.
        cmd = [EXE, "standin", "--port", str(port), "--latency", "0.1", "--record", str(log), "--model", MODEL]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(self.url + "/health", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.05)
        raise RuntimeError("stand-in did not start")

    def kill(self) -> None:
        """Gone at once, as a process killed by the kernel: requests in flight lose their connection."""
        self.proc.kill()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def items(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("spoken")
    video = write_speech_video(root / "speech.mp4")
    return write_items(
        root / "items.jsonl",
        [
            EvalItem(
                dataset="jsonl", id=f"spoken/{i}", video_id="spoken", video=str(video), question=q.question,
                choices=list(q.choices), answer_index=q.choices.index(q.answer), duration=24.0,
            )
            for i, q in enumerate(QUESTIONS)
        ],
    )  # fmt: skip


@pytest.fixture
def port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _received(log: Path) -> list[dict[str, Any]]:
    """The requests recorded so far: the lines up to the last newline (the stand-in may be writing the next)."""
    if not log.is_file():
        return []
    text = log.read_text()
    return [json.loads(line) for line in text[: text.rfind("\n") + 1].splitlines() if line.strip()]


def _frame(line: dict[str, Any]) -> bool:
    return line["endpoint"] == record.EMBEDDINGS and "messages" in (line.get("body") or {})


def _audio(line: dict[str, Any]) -> bool:
    return line["endpoint"] == record.TRANSCRIPTIONS and bool(line.get("files"))


def _wait_for(log: Path, proc: subprocess.Popen[str], wanted: Callable[[dict[str, Any]], bool]) -> None:
    deadline = time.monotonic() + 300  # a bound on waiting, not on speed
    while time.monotonic() < deadline and proc.poll() is None:
        if any(wanted(line) for line in _received(log)):
            return
        time.sleep(0.02)
    raise AssertionError(f"the eval ended or stalled before the request came: {proc.communicate()[1][-3000:]}")


def test_an_eea_eval_with_speech_rides_out_restarts_mid_embedding_and_mid_transcription(
    items: Path, port: int, tmp_path: Path
) -> None:
    log, out, db = tmp_path / "requests.jsonl", tmp_path / "ev", sqlite_url(tmp_path / "runs.db")
    standin = RecordingStandIn(port, log)
    cmd = [
        EXE, "eval", "run", "--dataset", "jsonl", "--root", str(items), "--agent", "eea", "--speech", "full",
        "--concurrency", "1", "--base-url", standin.url + "/v1", "--out", str(out), "--db", db,
        "--endpoint-patience", str(PATIENCE_S),
    ]  # fmt: skip
    env = {**os.environ, "VIDEOATLAS_LEASE_HEARTBEAT": "1", "VIDEOATLAS_LEASE_TIMEOUT": "3"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    away: list[float] = []
    try:
        for wanted in (_frame, _audio):  # the first frame sent to be embedded, then the speech sent to be heard
            _wait_for(log, proc, wanted)
            standin.kill()
            began = time.monotonic()
            time.sleep(AWAY_S)
            assert proc.poll() is None, f"the eval gave up while the endpoint was down: {proc.communicate()[1][-3000:]}"
            standin = RecordingStandIn(port, log)
            away.append(time.monotonic() - began)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
        standin.kill()
    assert proc.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr and all(a >= AWAY_S for a in away)
    assert stderr.count("endpoint_back") == 2  # each outage waited out, not survived by luck within the retries
    assert f"{len(QUESTIONS)} question(s)" in stdout and "0 failed to run" in stdout
    results = read_rows(out / "results.jsonl")
    assert [r["status"] for r in results] == ["ok"] * len(QUESTIONS)  # each answered once, in this first run
    assert sorted(r["item"] for r in results) == sorted(f"spoken/{i}" for i in range(len(QUESTIONS)))
    assert [s for (s,) in rows(db, "SELECT status FROM va_runs")] == ["finished"] * len(QUESTIONS)
    # What the outages cut was done again, once: the whole frame index, and the speech heard, not dropped.
    [(complete, frames)] = rows(db, "SELECT complete, frames FROM va_frame_indexes")
    assert complete and rows(db, "SELECT count(*) FROM va_frame_vectors")[0][0] == frames
    [(segments,)] = rows(db, "SELECT segments FROM va_speech_chunks")
    assert segments and "Bristol" in str(segments)
