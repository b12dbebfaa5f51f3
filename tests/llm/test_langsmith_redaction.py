"""LangSmith tracing against a fake collector on loopback: a run's traces arrive, and no base64 image is in
any payload unless ``VIDEOATLAS_LANGSMITH_IMAGES=1`` (which the same check then finds, so it can see one)."""

from __future__ import annotations

import asyncio
import base64
import gzip
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import zstandard
from aiohttp import web
from PIL import Image

from db_helpers import sqlite_url
from process_helpers import EXE
from videoatlas.llm.langsmith_redact import redact_images

SMALL = ["--workers", "2", "--rounds", "1", "--k", "4", "--cell-px", "96"]
IMAGE_IN_PAYLOAD = re.compile(rb"data:image/|/9j/[A-Za-z0-9+/]{64}|iVBORw0KGgo[A-Za-z0-9+/]{64}")
"""A data URL, or base64 that opens a JPEG or a PNG."""


class Collector:
    """A stand-in for the LangSmith API: every request's body kept (decompressed), ``{}`` for an answer."""

    def __init__(self) -> None:
        self.bodies: list[tuple[str, bytes]] = []
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def _any(self, request: web.Request) -> web.Response:
        body = await request.read()
        encoding = request.headers.get("Content-Encoding", "")
        if encoding == "zstd":
            body = zstandard.ZstdDecompressor().decompressobj().decompress(body)
        elif encoding == "gzip":
            body = gzip.decompress(body)
        self.bodies.append((f"{request.method} {request.path}", body))
        return web.json_response({})

    async def __aenter__(self) -> Collector:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._any)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = self.runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


async def traced_ask(video: Path, question: dict[str, Any], tmp_path: Path, **env: str) -> list[tuple[str, bytes]]:
    """``videoatlas ask`` on the in-process stand-in, traced to a fake collector: what the collector received."""
    args = [EXE, "ask", str(video), "-q", question["question"], "--standin", "--json", *SMALL]
    for choice in question["choices"]:
        args += ["-c", choice]
    tmp_path.mkdir(parents=True, exist_ok=True)
    args += ["--db", sqlite_url(tmp_path / "runs.db")]
    async with Collector() as collector:
        environ = {
            **os.environ,
            "VIDEOATLAS_HOME": str(tmp_path / "home"),
            "LANGSMITH_TRACING": "true",
            "LANGSMITH_ENDPOINT": collector.url,
            "LANGSMITH_API_KEY": "lsv2-dummy-key",
            "LANGSMITH_PROJECT": "videoatlas-test",
            **env,
        }
        proc = await asyncio.create_subprocess_exec(
            *args, env=environ, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await asyncio.wait_for(proc.communicate(), 300)
        assert proc.returncode == 0, err.decode()[-2000:]
        assert json.loads(out)["answer"] in question["choices"]
        return collector.bodies


@pytest.mark.e2e
@pytest.mark.slow
async def test_traces_reach_langsmith_without_images_unless_opted_in(
    synth_video: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    video, truth = synth_video
    question = next(q for q in truth["questions"] if q["kind"] == "needle_in_chapter")
    redacted = await traced_ask(video, question, tmp_path / "redacted")
    sent = b"\n".join(body for route, body in redacted if route.startswith("POST"))
    assert b"extract_search_task" in sent and b"OpenAICompatibleChat" in sent  # the graph's nodes and the VLM calls
    assert b"image omitted" in sent and b"VIDEOATLAS_LANGSMITH_IMAGES=1 uploads it" in sent
    assert not IMAGE_IN_PAYLOAD.search(sent), IMAGE_IN_PAYLOAD.search(sent)

    opted_in = await traced_ask(video, question, tmp_path / "opted-in", VIDEOATLAS_LANGSMITH_IMAGES="1")
    sent = b"\n".join(body for route, body in opted_in if route.startswith("POST"))
    assert b"data:image/jpeg;base64," in sent and b"image omitted" not in sent


def _png_base64() -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), (200, 30, 30)).save(buffer, format="PNG", compress_level=0)
    return base64.b64encode(buffer.getvalue()).decode()


@pytest.mark.unit
def test_redaction_replaces_data_urls_bare_image_base64_and_bytes_only() -> None:
    png = _png_base64()
    text = "plain words " * 40
    not_an_image = base64.b64encode(b"\x00\x01 not a picture " * 40).decode()
    message = {
        "messages": [
            [
                {
                    "content": [
                        {"type": "text", "text": text},
                        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
                    ]
                }
            ]
        ],
        "raw": png,
        "frame": b"\x89PNG....",
        "other": not_an_image,
        "tiny": "data:image/gif;base64,R0lGODlhAQABAAAAACw=",
        "count": 3,
    }
    out = redact_images(message)
    parts = out["messages"][0][0]["content"]
    assert parts[0] == {"type": "text", "text": text}
    assert re.fullmatch(
        r"\[png image omitted, \d+ bytes; VIDEOATLAS_LANGSMITH_IMAGES=1 uploads it\]", parts[1]["image_url"]["url"]
    )
    assert out["raw"].startswith("[png image omitted") and out["frame"] == "[8 bytes omitted]"
    assert out["tiny"].startswith("[gif image omitted")
    assert out["other"] == not_an_image and out["count"] == 3
    assert not IMAGE_IN_PAYLOAD.search(json.dumps(out).encode())
