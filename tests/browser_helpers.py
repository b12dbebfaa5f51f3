"""The web UI's browser tests' shared pieces: the Chromium they drive, where screenshots go, the server's port."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

CHROMIUM = "/usr/bin/chromium"
"""The Debian Chromium Playwright drives (never `playwright install`'s download)."""

ARTIFACTS = (
    Path(os.environ.get("VIDEOATLAS_ARTIFACTS", Path(__file__).resolve().parents[1] / "tmp" / "artifacts")) / "ui"
)
"""Where the browser tests leave their screenshots."""


def free_port() -> int:
    """A local port free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, proc: subprocess.Popen[Any]) -> None:
    """Wait until ``url`` answers (the server ``proc`` exiting first is an error)."""
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: the server exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not come up")
