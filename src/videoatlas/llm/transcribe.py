"""Speech to text over the endpoint's OpenAI ``/v1/audio/transcriptions`` route (vLLM serves Whisper models there).

Audio goes up as 16 kHz mono WAV in a multipart form, at most :data:`MAX_UPLOAD_BYTES` a request
(the 25 MB vLLM and OpenAI accept), asking for ``verbose_json`` with segment times. Each segment
comes back in the uploaded clip's own clock and is moved to video time by the clip's offset. A
server that returns no segment times gets the clip again in :data:`WINDOW_S` windows, each
window's text then placed at the window's known offset. A clip the server refuses as too large
(413, or a 400 that names the file's size) is split in halves, each sent on its own, down to
:data:`MIN_SPLIT_S`. Requests (and the model listing) go through the one transport policy
(:mod:`videoatlas.llm.transport`), as chat calls do: connection errors, timeouts, 408, 409, 429 and
5xx are retried with backoff, and a server that answered before and goes away (a restart) is
waited for up to the endpoint's patience, then :class:`~videoatlas.errors.EndpointDownError`. A
route the server does not have (404, 405) is :class:`TranscriptionUnavailable`, which a caller
takes as "no ears on this endpoint".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import openai
import structlog

from videoatlas.environment.audio import WAV_BYTES_PER_S, Samples, wav_bytes
from videoatlas.errors import EndpointError, EndpointUnreachableError
from videoatlas.llm.outage import EndpointWatch
from videoatlas.llm.settings import EndpointSettings
from videoatlas.llm.transport import Transport, failure_of

log = structlog.get_logger(__name__)

MAX_UPLOAD_BYTES = 25 * 1024 * 1024
"""The largest file one request may carry."""
CHUNK_S = 600.0
"""Seconds of audio a request carries at most (19.2 MB of 16 kHz 16-bit mono WAV, under the limit)."""
WINDOW_S = 30.0
"""Window length when the server gives no segment times: Whisper's own window, so each is one decode."""
MIN_SPLIT_S = 1.0
"""The shortest piece a clip refused as too large is split into; one still refused is an error."""
assert CHUNK_S * WAV_BYTES_PER_S < MAX_UPLOAD_BYTES

_TOO_LARGE_WORDS = ("too large", "file size", "filesize", "exceed")


class TranscriptionUnavailable(EndpointError):
    """The endpoint has no transcription route (or refuses the audio model): the caller stops asking."""


class ClipTooLarge(EndpointError):
    """The server refused a clip for its size (it is split and sent again in halves)."""


@dataclass(frozen=True, slots=True)
class Segment:
    """Speech heard from ``start`` to ``end`` (video seconds)."""

    start: float
    end: float
    text: str


@dataclass(frozen=True, slots=True)
class Transcript:
    """What one stretch of audio said, and how it was heard."""

    segments: tuple[Segment, ...]
    requests: int
    timed: bool
    """Whether the server gave segment times (False: times are those of the windows sent)."""
    seconds: float = 0.0
    """Wall time the requests took."""
    splits: int = 0
    """Clips the server refused as too large, each then sent again in halves."""


class Transcriber:
    """Transcribes clips of 16 kHz mono samples through one endpoint's transcription route.

    ``watch`` waits out the endpoint's outages (default: the shared watch of its base URL).
    """

    def __init__(
        self,
        settings: EndpointSettings,
        model: str,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        watch: EndpointWatch | None = None,
    ):
        self.settings = settings
        self.model = model
        self.transport = Transport(settings, "transcription", watch=watch, sleep=sleep)
        """How requests reach the endpoint: retries, backoff, outages (the same policy as chat calls)."""
        self._client = openai.AsyncOpenAI(
            base_url=settings.base_url, api_key=settings.api_key, timeout=settings.timeout_s, max_retries=0
        )

    async def transcribe(self, samples: Samples, offset: float, rate: int) -> Transcript:
        """The speech in ``samples`` (which start at video time ``offset``), in video time."""
        began = time.perf_counter()
        per_chunk = int(CHUNK_S * rate)
        heard = _Heard()
        for first in range(0, max(1, len(samples)), per_chunk):
            clip = samples[first : first + per_chunk]
            if len(clip) == 0:
                break
            await self._clip(clip, offset + first / rate, rate, heard)
        return Transcript(tuple(heard.segments), heard.requests, heard.timed, time.perf_counter() - began, heard.splits)

    async def _clip(self, clip: Samples, start: float, rate: int, heard: _Heard) -> None:
        """One clip's speech into ``heard``; a clip refused as too large goes again as two halves."""
        try:
            reply = await self._post(wav_bytes(clip))
        except ClipTooLarge as exc:
            heard.requests += 1
            if len(clip) < 2 * MIN_SPLIT_S * rate:
                raise EndpointError(
                    f"transcription refused even for {len(clip) / rate:.1f} s of audio: {exc}"
                ) from None
            heard.splits += 1
            half = len(clip) // 2
            log.info("transcription_split", offset=round(start, 3), seconds=round(len(clip) / rate, 3))
            await self._clip(clip[:half], start, rate, heard)
            await self._clip(clip[half:], start + half / rate, rate, heard)
            return
        heard.requests += 1
        got = reply.get("segments")
        end = start + len(clip) / rate
        if isinstance(got, list) and all(_timed(s) for s in got):
            heard.segments += [
                Segment(start + float(s["start"]), min(end, start + float(s["end"])), str(s["text"]).strip())
                for s in got
                if str(s.get("text", "")).strip()
            ]
            return
        heard.timed = False
        log.info("transcription_untimed", offset=round(start, 3), windows=WINDOW_S)
        step = int(WINDOW_S * rate)
        if len(clip) <= step:  # one window already: its text is the reply's
            text = str(reply.get("text", "")).strip()
            if text:
                heard.segments.append(Segment(start, end, text))
            return
        for w in range(0, len(clip), step):
            piece = clip[w : w + step]
            text = str((await self._post(wav_bytes(piece))).get("text", "")).strip()
            heard.requests += 1
            if text:
                heard.segments.append(Segment(start + w / rate, start + (w + len(piece)) / rate, text))

    async def served_model(self) -> str:
        """The first model the server lists (the one a Whisper server serves)."""

        def unlisted(exc: Exception, _: int = 0) -> EndpointError:
            return _error(exc, f"cannot list the models of {self.settings.base_url}: {_short(exc)}")

        try:
            page = await self.transport.send(self._client.models.list, unlisted)
        except openai.OpenAIError as exc:  # a refusal
            raise unlisted(exc) from None
        names = [m.id for m in page.data]
        if not names:
            raise EndpointError(f"the speech endpoint at {self.settings.base_url} serves no model")
        return names[0]

    async def _post(self, wav: bytes) -> dict[str, Any]:
        """One request, sent under the transport policy; the reply as a dict."""

        async def request() -> Any:
            raw = await self._client.audio.transcriptions.with_raw_response.create(
                file=("audio.wav", wav, "audio/wav"),
                model=self.model,
                language="en",
                response_format="verbose_json",
                timestamp_granularities=["segment"],
                temperature=0.0,
            )
            return raw.http_response.json()

        def exhausted(exc: Exception, attempts: int) -> EndpointError:
            return _error(exc, f"transcription failed after {attempts} tries: {_short(exc)}")

        try:
            body = await self.transport.send(request, exhausted)
        except (openai.NotFoundError, openai.PermissionDeniedError) as exc:
            raise TranscriptionUnavailable(
                f"no transcription route at {self.settings.base_url}: {_short(exc)}"
            ) from None
        except openai.APIStatusError as exc:
            if exc.status_code == 413 or (exc.status_code == 400 and _names_size(exc)):
                raise ClipTooLarge(_short(exc)) from None
            if exc.status_code == 405:
                raise TranscriptionUnavailable(
                    f"no transcription route at {self.settings.base_url}: {_short(exc)}"
                ) from None
            raise EndpointError(f"transcription refused: {_short(exc)}") from None
        return body if isinstance(body, dict) else {}

    async def close(self) -> None:
        """Close the HTTP client."""
        await self._client.close()


def _error(exc: Exception, message: str) -> EndpointError:
    """``message`` as :class:`EndpointUnreachableError` when ``exc`` got no answer at all, else as an EndpointError."""
    failure = failure_of(exc)
    unanswered = failure is not None and failure.status is None
    return EndpointUnreachableError(message) if unanswered else EndpointError(message)


def _timed(segment: Any) -> bool:
    return (
        isinstance(segment, dict)
        and isinstance(segment.get("start"), int | float)
        and isinstance(segment.get("end"), int | float)
    )


class _Heard:
    """What the clips of one call heard so far."""

    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self.requests = 0
        self.splits = 0
        self.timed = True


def _names_size(exc: openai.APIStatusError) -> bool:
    """Whether a refusal is about the file's size (vLLM: "Maximum file size exceeded")."""
    text = str(exc).lower()
    return any(word in text for word in _TOO_LARGE_WORDS)


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:300]


def join_text(segments: Sequence[Segment]) -> str:
    """The segments' words as one text."""
    return " ".join(s.text for s in segments)
