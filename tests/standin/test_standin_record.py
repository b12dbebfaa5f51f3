"""``standin --record FILE``: every chat, embeddings and transcription request the stand-in receives is kept, one
JSON line each naming its route, before any validation (``make conformance`` checks each with vLLM's own code)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from videoatlas.environment.audio import wav_bytes
from videoatlas.errors import ModelNotServedError
from videoatlas.llm.embeddings import EmbeddingsClient
from videoatlas.llm.settings import EndpointSettings
from videoatlas.llm.transcribe import Transcriber, TranscriptionUnavailable
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas_standin.version import STANDIN_MODEL

pytestmark = pytest.mark.e2e


def _post(base_url: str, body: object) -> int:
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            status: int = reply.status
            return status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_every_chat_request_is_recorded_as_one_json_line_even_a_refused_one(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    good: dict[str, Any] = {
        "model": STANDIN_MODEL,
        "messages": [{"role": "user", "content": "Line one.\nWhich colour? Answer in one word."}],
        "max_completion_tokens": 8,
    }
    unknown_model = {**good, "model": "not-served"}
    malformed = {"model": STANDIN_MODEL, "messages": "not a list"}
    with RunningServer(StandinServer(StandinConfig(record=record))) as server:
        assert _post(server.base_url, good) == 200
        assert _post(server.base_url, unknown_model) == 404
        assert _post(server.base_url, malformed) == 400
    lines = record.read_text(encoding="utf-8").splitlines()
    chat = "/v1/chat/completions"
    assert [json.loads(line) for line in lines] == [
        {"endpoint": chat, "body": b} for b in (good, unknown_model, malformed)
    ]


async def test_our_embeddings_and_transcription_requests_are_recorded_with_their_route(tmp_path: Path) -> None:
    """The requests our clients build, refused for their model name so that no model is loaded: the file part is
    recorded by name, type, size and digest, never its bytes."""
    record = tmp_path / "requests.jsonl"
    samples = np.zeros(16_000, dtype=np.int16)
    with RunningServer(StandinServer(StandinConfig(record=record))) as server:
        embedder = EmbeddingsClient(server.base_url, "not-served", max_retries=0)
        with pytest.raises(ModelNotServedError):
            await embedder.embed_texts(["query: a harbour", "passage: a ship"])
        await embedder.aclose()
        transcriber = Transcriber(EndpointSettings(base_url=server.base_url, max_retries=0), "not-served")
        with pytest.raises(TranscriptionUnavailable):
            await transcriber.transcribe(samples, offset=0.0, rate=16_000)
        await transcriber.close()
    embedding, transcription = (json.loads(line) for line in record.read_text(encoding="utf-8").splitlines())
    assert embedding == {
        "endpoint": "/v1/embeddings",
        "body": {"model": "not-served", "input": ["query: a harbour", "passage: a ship"], "encoding_format": "float"},
    }
    assert transcription["endpoint"] == "/v1/audio/transcriptions"
    assert transcription["content_type"] == "multipart/form-data"
    assert sorted(map(tuple, transcription["form"])) == [
        ("language", "en"),
        ("model", "not-served"),
        ("response_format", "verbose_json"),
        ("temperature", "0.0"),
        ("timestamp_granularities[]", "segment"),
    ]
    wav = wav_bytes(samples)
    assert transcription["files"] == [
        {
            "field": "file",
            "filename": "audio.wav",
            "content_type": "audio/wav",
            "size": len(wav),
            "sha256": hashlib.sha256(wav).hexdigest(),
        }
    ]


def test_a_record_file_in_a_missing_folder_is_refused_before_serving(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "videoatlas.cli.main",
            "standin",
            "--port",
            "1",
            "--record",
            str(tmp_path / "no" / "r"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "--record: folder" in proc.stderr and "does not exist" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_long_request_is_appended_as_one_whole_line_in_one_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a buffered file wrote a line longer than its buffer in pieces: a reader saw half a line, and a stand-in killed
    # between the pieces would leave half a line for the next request's line to run into
    from videoatlas_standin import record

    log = tmp_path / "requests.jsonl"
    log.write_text('{"endpoint":"/v1/chat/completions","body":{}}\n')
    writes: list[int] = []
    real_write = os.write

    def counted(fd: int, data: bytes) -> int:
        writes.append(len(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", counted)
    body = {"messages": [{"role": "user", "content": "x" * 200_000}]}
    record.json_request(log, record.CHAT, body)
    lines = log.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1]) == {"endpoint": record.CHAT, "body": body}
    assert writes == [len(lines[1]) + 1]
