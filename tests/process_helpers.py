"""Real processes in tests: the installed ``videoatlas`` command, and the stand-in VLM as a process of its own."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

EXE = str(Path(sys.executable).parent / "videoatlas")
"""The console command of the environment the tests run in (a real process, as a user runs it)."""


def bare_env(home: Path) -> dict[str, str]:
    """A fresh user's environment: a data directory of its own and a bare PATH, nothing else of ours.

    The stand-in's OCR cache and its model threads are passed on (``tests/conftest.py`` sets both for the
    session): a reading from the cache equals a fresh one, and so does one read on fewer threads, so they
    change how often and how fast the recogniser runs, never what the run sees.
    """
    env = {"VIDEOATLAS_HOME": str(home), "PATH": "/usr/bin:/bin"}
    for name in ("VIDEOATLAS_OCR_CACHE", "VIDEOATLAS_STANDIN_THREADS"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


class StandIn:
    """The stand-in VLM as its own process (so killing the agent does not kill it)."""

    def __init__(self, latency: float, port: int | None = None) -> None:
        """Start it on ``port`` (default: a free one; a given one restarts a stopped stand-in where it was)."""
        if port is None:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = int(s.getsockname()[1])
        self.port = port
        self.proc = subprocess.Popen(
            [EXE, "standin", "--port", str(self.port), "--latency", str(latency)], stderr=subprocess.DEVNULL
        )
        self.url = f"http://127.0.0.1:{self.port}"
        for _ in range(200):
            try:
                httpx.get(self.url + "/health", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.05)
        raise RuntimeError("stand-in did not start")

    def stats(self) -> dict[str, Any]:
        return httpx.get(self.url + "/stats", timeout=10).json()  # type: ignore[no-any-return]

    def reset(self) -> None:
        httpx.post(self.url + "/stats/reset", timeout=10)

    def stop(self) -> None:
        """Stop it (SIGTERM; a server still busy after 30 s, as on a loaded machine, is killed)."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
