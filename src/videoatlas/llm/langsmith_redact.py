"""LangSmith tracing without the pictures: a run's images stay on this machine unless the user opts in.

LangChain traces to LangSmith when ``LANGSMITH_TRACING=true`` (with ``LANGSMITH_API_KEY``, and
``LANGSMITH_PROJECT`` / ``LANGSMITH_ENDPOINT`` if set). Every VLM call carries its grids and frames as
base64 data URLs, so by default :func:`langsmith_scope` hands the tracer a client that replaces each
image in a run's inputs and outputs by a short note before anything is sent.
``VIDEOATLAS_LANGSMITH_IMAGES=1`` sends them as they are.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import os
import re
from collections.abc import Iterator
from typing import Any

IMAGES_ENV = "VIDEOATLAS_LANGSMITH_IMAGES"
"""Set to 1 to upload a run's images to LangSmith with its trace."""

_DATA_URL = re.compile(r"data:image/([\w.+-]+);base64,([A-Za-z0-9+/=\s]+)")
_BARE = re.compile(r"[A-Za-z0-9+/]{256,}={0,2}")
_MAGIC = {b"\xff\xd8\xff": "jpeg", b"\x89PNG": "png", b"GIF8": "gif", b"RIFF": "webp"}
_BASE64_BYTES = 3 / 4


def images_allowed() -> bool:
    """Whether the user opted in to uploading images (``VIDEOATLAS_LANGSMITH_IMAGES=1``)."""
    return os.environ.get(IMAGES_ENV, "").strip().lower() in ("1", "true", "yes")


def _note(kind: str, encoded_len: int) -> str:
    return f"[{kind} image omitted, {int(encoded_len * _BASE64_BYTES)} bytes; {IMAGES_ENV}=1 uploads it]"


def _bare_image(match: re.Match[str]) -> str:
    blob = match.group(0)
    try:
        head = base64.b64decode(blob[:16] + "=" * (-len(blob[:16]) % 4))
    except (binascii.Error, ValueError):
        return blob
    kind = next((name for magic, name in _MAGIC.items() if head.startswith(magic)), None)
    return _note(kind, len(blob)) if kind else blob


def redact_images(value: Any) -> Any:
    """``value`` with every base64 image (a data URL, or a bare base64 JPEG/PNG/GIF/WebP) and raw bytes replaced."""
    if isinstance(value, str):
        if "data:image/" in value:
            value = _DATA_URL.sub(lambda m: _note(m.group(1), len(m.group(2))), value)
        return _BARE.sub(_bare_image, value) if len(value) >= 256 else value
    if isinstance(value, bytes | bytearray | memoryview):
        return f"[{len(value)} bytes omitted]"
    if isinstance(value, dict):
        return {k: redact_images(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_images(v) for v in value]
    return value


def _redact_dict(values: dict[str, Any]) -> dict[str, Any]:
    redacted: dict[str, Any] = redact_images(values)
    return redacted


@functools.cache
def _redacting_client() -> Any:
    """One client for the process (its background thread sends the runs; it drains before the process exits)."""
    from langsmith import Client

    return Client(hide_inputs=_redact_dict, hide_outputs=_redact_dict)


@contextlib.contextmanager
def langsmith_scope() -> Iterator[None]:
    """Within it, LangSmith traces (if tracing is on) are sent without images, unless the user opted in."""
    from langsmith import tracing_context
    from langsmith.utils import tracing_is_enabled

    if not tracing_is_enabled() or images_allowed():
        yield
        return
    with tracing_context(client=_redacting_client()):
        yield
