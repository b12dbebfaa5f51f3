"""``standin --record FILE``: every request a route receives, one JSON line each, before any validation.

``make conformance`` sends each recorded request through vLLM's own code (``conformance/``). A line names its
route (``{"endpoint": "/v1/embeddings", ...}``) and carries the request: a JSON route's parsed ``"body"``; a form
route's (audio transcriptions) ``"content_type"``, its text fields as ``"form"`` (``[name, value]`` pairs in the
order sent) and its file parts as ``"files"`` (``field``, ``filename``, ``content_type``, ``size``, ``sha256``:
the audio itself is not kept).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from aiohttp import web

CHAT = "/v1/chat/completions"
EMBEDDINGS = "/v1/embeddings"
DECISIONS = "/v1/decisions"
TRANSCRIPTIONS = "/v1/audio/transcriptions"


def _append(path: Path, line: dict[str, Any]) -> None:
    """Append ``line`` with one ``write()``.

    A buffered file writes a long line (an image's base64) in pieces: a reader saw half of one, and a
    stand-in killed between the pieces would leave half a line for the next line to run into.
    """
    data = memoryview((json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8"))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        while data:  # a regular file takes it all at once; a short write (disk full, a signal) goes on
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


def json_request(path: Path | None, endpoint: str, body: object) -> None:
    """Append one JSON request body (nothing when the server records nothing)."""
    if path is not None:
        _append(path, {"endpoint": endpoint, "body": body})


def form_request(path: Path | None, endpoint: str, content_type: str, form: Any) -> None:
    """Append one form request (``request.post()``'s): its text fields, and each file's size and digest (rewound)."""
    if path is None:
        return
    fields: list[list[str]] = []
    files: list[dict[str, Any]] = []
    for name, value in form.items():
        if isinstance(value, web.FileField):
            data = value.file.read()
            value.file.seek(0)
            about = {"field": name, "filename": value.filename, "content_type": value.content_type}
            files.append({**about, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
        else:
            fields.append([name, str(value)])
    _append(path, {"endpoint": endpoint, "content_type": content_type, "form": fields, "files": files})
