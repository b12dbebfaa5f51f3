"""A speech server the user named (``--speech-url``) that never answers fails the run with exit 5 and one line
naming it, instead of a guessed answer from a run that silently went deaf."""

from __future__ import annotations

import os
import socket
import subprocess
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from db_helpers import rows, sqlite_url
from process_helpers import EXE

pytestmark = pytest.mark.e2e


def _talking_video(path: Path, seconds: float = 20.0) -> Path:
    """Grey frames at 2 fps with a tone on an AAC track: a video with sound to hear."""
    with av.open(str(path), "w") as container:
        video = container.add_stream("libx264", rate=2)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        audio = container.add_stream("aac", rate=16000, layout="mono")
        for i in range(round(seconds * 2)):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), 90, np.uint8), format="rgb24")
            frame.pts, frame.time_base = i, Fraction(1, 2)
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
        tone = (np.sin(np.arange(round(seconds * 16000)) * 2 * np.pi * 440 / 16000) * 8000).astype(np.int16)
        for first in range(0, len(tone), 1024):
            piece = av.AudioFrame.from_ndarray(tone[first : first + 1024].reshape(1, -1), format="s16", layout="mono")
            piece.sample_rate, piece.pts, piece.time_base = 16000, first, Fraction(1, 16000)
            container.mux(audio.encode(piece))
        container.mux(audio.encode(None))
    return path


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # nothing listens on it once the socket is closed


@pytest.mark.parametrize("model", [None, "whisper-tiny"], ids=["model-asked-of-the-server", "model-named"])
def test_a_named_speech_server_that_never_answers_fails_the_run_with_one_line(
    tmp_path: Path, model: str | None
) -> None:
    video = _talking_video(tmp_path / "talk.mp4")
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    db = sqlite_url(tmp_path / "runs.db")
    cmd = [EXE, "ask", str(video), "-q", "What is said?", "-c", "yes", "-c", "no", "--standin", "--db", db]
    cmd += ["--speech-url", url, "--json", *(["--speech-model", model] if model else [])]
    env = {**os.environ, "VIDEOATLAS_HOME": str(tmp_path / "home")}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)

    assert done.returncode == 5, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == "", done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and url in errors[0] and "--speech-url" in errors[0], done.stderr
    assert rows(db, "SELECT status, answer FROM va_runs") == [("failed", None)]
