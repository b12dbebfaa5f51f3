"""The web UI's browser tests' shared pieces: the server they start, the Chromium they drive, where screenshots go."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Browser, Page, sync_playwright

from process_helpers import EXE

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


@contextmanager
def ui_server(db: str, home: Path, evals: Sequence[Path] = (), ready: str = "/runs") -> Iterator[str]:
    """``videoatlas ui`` over ``db`` (and the eval folders ``evals``) on a free port, with ``home`` as its
    VIDEOATLAS_HOME; yields its URL once ``ready`` answers. What it wrote to stderr must hold no traceback."""
    port = free_port()
    proc = subprocess.Popen(
        [EXE, "ui", "--db", db, "--port", str(port), *(["--evals", *map(str, evals)] if evals else [])],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "VIDEOATLAS_HOME": str(home)},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(url + ready, proc)
        yield url
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err


@contextmanager
def chromium() -> Iterator[Browser]:
    """Headless Chromium (the screenshots' folder made first)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def watched_tab(browser: Browser) -> Iterator[Page]:
    """A 1280 x 900 tab of its own; no script error may have been raised in it by the time it closes."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield tab
    finally:
        context.close()
    assert not errors, errors
