"""``videoatlas mcp --http``: the SDK's client over streamable HTTP.

A client that hangs up mid-question leaves an interrupted run, which the ``resume`` tool finishes.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from db_helpers import sqlite_url
from process_helpers import EXE, StandIn

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

OPTIONS = {"workers": 2, "rounds": 1, "k": 4, "cell_px": 160}
"""A run of about ten calls on small grids: long enough to hang up in the middle of."""
LEASE = {"VIDEOATLAS_LEASE_HEARTBEAT": "0.5", "VIDEOATLAS_LEASE_TIMEOUT": "3"}


class McpServer:
    """``videoatlas mcp --http`` as its own process, on a free loopback port."""

    def __init__(self, root: Path, endpoint: str, db: str, home: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        cmd = [EXE, "mcp", "--http", "--port", str(port), "--root", str(root), "--base-url", endpoint, "--db", db]
        env = {**os.environ, "VIDEOATLAS_HOME": str(home), **LEASE}
        self.proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
        self.url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + 180  # a bound on waiting for start-up, generous for a loaded machine
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                httpx.get(self.url, timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        self.proc.kill()
        raise AssertionError(f"videoatlas mcp --http did not start: {self.proc.communicate()[1][-2000:]}")

    def stop(self) -> str:
        """Stop it; its stderr."""
        self.proc.terminate()
        return self.proc.communicate(timeout=30)[1]


@pytest.fixture
def standin() -> Iterator[StandIn]:
    server = StandIn(latency=0.3)
    yield server
    server.stop()


async def run_status(url: str, run_id: str, wanted: str) -> dict[str, Any]:
    """The run as ``list_runs`` shows it, once its status is ``wanted`` (or after a minute)."""
    deadline = time.monotonic() + 60
    while True:
        asked = time.monotonic()
        async with Client(url) as client:
            answer = await client.call_tool("list_runs", {})
        took = time.monotonic() - asked
        assert answer.structured_content is not None, f"list_runs failed after {took:.1f} s: {answer.content}"
        row: dict[str, Any] = next(r for r in answer.structured_content["result"] if r["id"] == run_id)
        if row["status"] == wanted or time.monotonic() > deadline:
            return row
        await asyncio.sleep(0.3)


async def start_question(url: str, args: dict[str, Any]) -> tuple[asyncio.Task[Any], str]:
    """Ask over HTTP in a task of its own; the task and the run id, once the run has made some progress."""
    seen: list[str] = []
    going = asyncio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")
        if len(seen) >= 3:
            going.set()

    async def ask() -> Any:
        async with Client(url, read_timeout_seconds=300) as client:
            return await client.call_tool("ask", args, progress_callback=on_progress)

    task = asyncio.create_task(ask())
    await asyncio.wait_for(going.wait(), 120)
    assert seen[0].startswith("run ") and seen[0].endswith(" started"), seen
    return task, seen[0].split()[1]


async def test_http_server_refuses_outside_paths_and_a_run_its_client_left_is_resumed_to_an_answer(
    synth_video: tuple[Path, dict[str, Any]], standin: StandIn, tmp_path: Path
) -> None:
    video, truth = synth_video
    question = next(q for q in truth["questions"] if q["kind"] == "needle_in_chapter")
    args = {"path": str(video), "question": question["question"], "choices": question["choices"], "options": OPTIONS}
    server = McpServer(video.parent, standin.url + "/v1", sqlite_url(tmp_path / "runs.db"), tmp_path / "home")
    try:
        async with Client(server.url) as client:
            for tool, call in (
                ("ask", {"path": "/etc/hostname", "question": "what?"}),
                ("probe", {"path": "/etc/hostname"}),
            ):
                outside = await client.call_tool(tool, call)
                assert outside.is_error and "outside the folders this server may open" in str(outside.content[0])

        # The client hangs up mid-question: the run stops, interrupted, and the resume tool finishes it.
        task, run_id = await start_question(server.url, args)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        row = await run_status(server.url, run_id, "interrupted")
        assert row["status"] == "interrupted", row
        resumed_seen: list[str] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            resumed_seen.append(message or "")

        async with Client(server.url, read_timeout_seconds=300) as client:
            resumed = await client.call_tool("resume", {"run_id": run_id}, progress_callback=on_progress)
            assert not resumed.is_error, resumed.content
            assert resumed.structured_content is not None
            assert resumed.structured_content["run_id"] == run_id
            assert resumed.structured_content["answer"] in question["choices"]
            assert all(0 <= e["time"] <= 180 for e in resumed.structured_content["evidence"])
            assert resumed_seen[0] == f"run {run_id} started"
            again = await client.call_tool("resume", {"run_id": run_id})
            assert again.is_error and "already finished" in str(again.content[0])
        assert (await run_status(server.url, run_id, "finished"))["answer"] == resumed.structured_content["answer"]
    finally:
        err = server.stop()
    assert "Traceback" not in err, err
