"""``standin --record FILE``: every chat request the stand-in receives is kept, one JSON line each, before any
validation (``make conformance`` checks each recorded request with vLLM's own code)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from videoatlas.standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas.standin.version import STANDIN_MODEL

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
    assert [json.loads(line) for line in lines] == [good, unknown_model, malformed]


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
