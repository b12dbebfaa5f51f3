"""Real processes in tests: the installed ``videoatlas`` command, and the stand-in VLM as a process of its own."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

EXE = str(Path(sys.executable).parent / "videoatlas")
"""The console command of the environment the tests run in (a real process, as a user runs it)."""


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
        self.proc.terminate()
        self.proc.wait(timeout=10)
