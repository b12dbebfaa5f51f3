"""The run's ears: the speech track of its video, transcribed on demand, cached, and counted in the run's cost.

A node asks for the speech of the stretches it is about to show (:meth:`Speech.hear`); the chunks
of the track those need (:func:`videoatlas.environment.speech.chunks_to_hear`) come from this
process's memory, then the run store, and only then from the transcription route, one request
per chunk, each stored as soon as it is heard. So a chunk is transcribed at most once per video
content and speech model: a second run, another agent, a resumed run or a pass that was
interrupted finds it stored. ``speech="full"`` hears every chunk at the first look (a pass that
stops midway goes on from the chunks it stored). What was heard comes back as subtitles, with the
cost this call added (audio seconds, requests, their time) and a line for each thing that went wrong:

* no audio stream: speech is off for the run (said once, when the run opens);
* a sound track that cannot be decoded, or a server without the route (404, 405), or with no
  speech model: speech is withdrawn for the rest of the run in one line, and the run goes on;
* a reply without segment times: the text is placed at its chunk's time, and the line says so;
* a chunk refused as too large: split in halves by the transcriber (:mod:`videoatlas.llm.transcribe`);
* any other refusal or an endpoint that stays away: that chunk is not heard in this call (nothing is
  stored, so a later look asks again), one line;
* a speech server the user named (``--speech-url``) that never answers: the run fails
  (:class:`~videoatlas.errors.EndpointUnreachableError`), as a VLM endpoint that never answers does:
  the user asked for ears that are not there. One that answered and goes away is waited out by the
  transport (and past its patience the run stops as interrupted).

The route is checked by the run's first transcription request (a run that finds every chunk it
needs stored sends none).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

import structlog

from videoatlas.environment.audio import RATE, AudioError, AudioPiece, read_pieces
from videoatlas.environment.geometry import Interval
from videoatlas.environment.speech import CHUNK_S, SpeechTrack, chunk_count, chunk_span, chunks_to_hear
from videoatlas.environment.subtitles import SubtitleLine, Subtitles
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import EndpointError, EndpointUnreachableError
from videoatlas.llm.settings import EndpointSettings
from videoatlas.llm.transcribe import Transcriber, TranscriptionUnavailable
from videoatlas.persistence import speech as stored
from videoatlas.state.models import Cost, Repair

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from videoatlas.environment.video import VideoInfo

log = structlog.get_logger(__name__)

_KEPT = 8
"""Speech tracks this process keeps in memory (a run of many questions on one video reads it once)."""
_TRACKS: OrderedDict[str, dict[int, stored.StoredChunk]] = OrderedDict()


@dataclass(frozen=True, slots=True)
class Heard:
    """What a node hears for its view: the speech as subtitles (None: nothing to hear), its cost, what went wrong."""

    subtitles: Subtitles | None
    cost: Cost = field(default_factory=Cost)
    repairs: tuple[Repair, ...] = ()


@dataclass(frozen=True, slots=True)
class Where:
    """Where a line about speech goes in the trace: the node, its round and worker."""

    node: str
    round: int = 0
    worker: str | None = None

    def repair(self, kind: Literal["dropped", "fallback"], detail: str) -> Repair:
        """A trace line at this place."""
        return Repair(node=self.node, round=self.round, worker=self.worker, kind=kind, detail=detail)


def off_reason(mode: str, has_audio: bool, subtitles: bool) -> str:
    """Why a run does not listen ("" when it does): turned off, a subtitle file given, or no sound track."""
    if mode == "off":
        return "speech is off for this run (--speech off)"
    if subtitles:
        return "a subtitle file is given: it is used instead of the speech track"
    if not has_audio:
        return "the video has no audio stream: no speech track"
    return ""


class Speech:
    """One run's speech track: chunks heard through its transcription endpoint, kept in the run store."""

    def __init__(
        self,
        info: VideoInfo,
        identity: str,
        endpoint: EndpointSettings,
        model: str,
        *,
        full: bool = False,
        named_model: bool = True,
        required: bool = False,
        engine: Engine | None = None,
        pieces: Sequence[AudioPiece] | None = None,
    ) -> None:
        self.info = info
        self.required = required
        """The user named this server: one that never answers fails the run instead of withdrawing speech."""
        self.pieces = list(pieces or [AudioPiece(info.path, 0.0, info.duration, info.start_time, info.has_audio)])
        """Where the sound comes from: the file, or each file of a manifest at its offset."""
        self.identity = identity
        self.endpoint = endpoint
        self.full = full
        self.engine = engine
        self.track = SpeechTrack(info.duration)
        self.withdrawn = ""
        """Why speech was withdrawn for the rest of the run ("" while it is heard)."""
        self._model = model
        self._named_model = named_model
        self._transcriber: Transcriber | None = None
        self._lock = asyncio.Lock()
        self._announced = False

    @property
    def model(self) -> str:
        """The speech model the chunks are heard (and cached) by."""
        return self._model

    @property
    def key(self) -> str:
        """The track's key in the store and in this process's memory."""
        return stored.track_key(self.identity, self._model, CHUNK_S)

    def said(self) -> Subtitles | None:
        """What was heard so far, without asking for more (None when speech was withdrawn)."""
        return None if self.withdrawn else self.track.subtitles()

    async def hear(self, spans: Sequence[Interval], where: Where, whole: bool = False) -> Heard:
        """The speech of ``spans`` (sampled where wide; all of it with ``whole``), fetched as needed."""
        if self.withdrawn:
            return Heard(None)
        duration = self.info.duration
        wanted = list(range(chunk_count(duration))) if self.full else chunks_to_hear(spans, duration, whole)
        cost = Cost()
        repairs: list[Repair] = []
        async with self._lock:  # parallel workers wait for a chunk another is hearing, then read it
            await self._recall(wanted)
            for index in self.track.missing(wanted):
                if self.withdrawn:
                    break
                got, line = await self._transcribe(index, where)
                if line is not None:
                    repairs.append(line)
                if got is None:
                    continue
                cost = cost + Cost(audio_s=got.audio_s, transcriptions=got.requests, transcribe_s=got.seconds)
                self._keep(got)
            if self.withdrawn:  # said once, by the node that found it out
                said = (
                    []
                    if self._announced
                    else [where.repair("fallback", f"speech withdrawn for this run: {self.withdrawn}")]
                )
                self._announced = True
                return Heard(None, cost, (*repairs, *said))
        return Heard(self.track.subtitles(), cost, tuple(repairs))

    async def _recall(self, wanted: Sequence[int]) -> None:
        """Chunks heard before, from this process or the store, into the track."""
        missing = self.track.missing(wanted)
        if not missing:
            return
        await self._resolve_model()
        known = _TRACKS.get(self.key, {})
        found = {i: known[i] for i in missing if i in known}
        rest = [i for i in missing if i not in found]
        if rest and self.engine is not None:
            found |= await asyncio.to_thread(stored.load_chunks, self.engine, self.key, rest)
        for chunk in found.values():
            self._remember(chunk)

    async def _resolve_model(self) -> None:
        """A speech server's model, asked of the server once, when none was named."""
        if self._named_model:
            return
        self._named_model = True
        try:
            self._model = await self._client().served_model()
        except EndpointError as exc:
            self._fail_if_required(exc)
            self._withdraw(f"no speech model at {self.endpoint.base_url}: {exc}")

    async def _transcribe(self, index: int, where: Where) -> tuple[stored.StoredChunk | None, Repair | None]:
        """Chunk ``index`` heard now (None when it could not be), and a line about what went wrong."""
        if self.withdrawn:
            return None, None
        span = chunk_span(index, self.info.duration)
        loop = asyncio.get_running_loop()
        try:
            samples = await loop.run_in_executor(None, read_pieces, self.pieces, span)
            if len(samples) == 0:  # past the end of the sound track: silence, known without asking
                return await self._stored(span, stored.StoredChunk(index, (), True, 0, 0.0, 0.0)), None
            transcript = await self._client().transcribe(samples, span.start, RATE)
        except (AudioError, TranscriptionUnavailable) as exc:
            self._withdraw(str(exc))
            return None, None
        except EndpointError as exc:
            self._fail_if_required(exc)
            detail = f"speech of {_span(span)} not heard: {exc}"
            log.warning("speech_chunk_failed", chunk=index, reason=str(exc))
            return None, where.repair("dropped", detail)
        got = stored.StoredChunk(
            index,
            tuple((s.start, s.end, s.text) for s in transcript.segments),
            transcript.timed,
            transcript.requests,
            round(len(samples) / RATE, 3),
            round(transcript.seconds, 3),
        )
        await self._stored(span, got)
        line = None
        if not transcript.timed:
            line = where.repair(
                "fallback", f"no segment times for {_span(span)}: its speech placed at the whole stretch"
            )
        if transcript.splits:
            note = f"{transcript.splits} clip(s) of {_span(span)} refused as too large: sent again in halves"
            line = where.repair("dropped", note)
        log.info("speech_heard", chunk=index, segments=len(got.segments), seconds=got.seconds)
        return got, line

    async def _stored(self, span: Interval, chunk: stored.StoredChunk) -> stored.StoredChunk:
        """``chunk`` kept in the run store (when the run has one)."""
        if self.engine is not None:
            where = (span.start, span.end)
            await asyncio.to_thread(stored.store_chunk, self.engine, self.key, self.identity, self._model, where, chunk)
        return chunk

    def _fail_if_required(self, exc: EndpointError) -> None:
        """Raise when the server the user named does not answer at all (a refusal is the request's own)."""
        if self.required and isinstance(exc, EndpointUnreachableError):
            raise EndpointUnreachableError(
                f"the speech server at {self.endpoint.base_url} (--speech-url) does not answer: {exc}"
            ) from None

    def _withdraw(self, why: str) -> None:
        self.withdrawn = why
        log.warning("speech_withdrawn", reason=why)

    def _keep(self, chunk: stored.StoredChunk) -> None:
        known = _TRACKS.setdefault(self.key, {})
        known[chunk.chunk] = chunk
        _TRACKS.move_to_end(self.key)
        while len(_TRACKS) > _KEPT:
            _TRACKS.popitem(last=False)
        self._remember(chunk)

    def _remember(self, chunk: stored.StoredChunk) -> None:
        self.track.add(chunk.chunk, [SubtitleLine(a, b, text) for a, b, text in chunk.segments])

    def _client(self) -> Transcriber:
        if self._transcriber is None:
            self._transcriber = Transcriber(self.endpoint, self._model)
        self._transcriber.model = self._model
        return self._transcriber

    async def aclose(self) -> None:
        """Close the transcription client, if one was opened."""
        if self._transcriber is not None:
            await self._transcriber.close()
            self._transcriber = None


def open_speech(
    mode: str,
    info: VideoInfo,
    identity: str,
    vlm: EndpointSettings,
    *,
    speech_url: str | None = None,
    speech_model: str = "",
    has_subtitles: bool = False,
    engine: Engine | None = None,
    pieces: Sequence[AudioPiece] | None = None,
) -> tuple[Speech | None, str]:
    """The run's ears (None when it does not listen) and why not ("" when it does)."""
    why = off_reason(mode, info.has_audio, has_subtitles)
    if why:
        return None, why
    endpoint = replace(vlm, base_url=speech_url) if speech_url else vlm
    # A server of its own serves its own model; on the VLM's server, the chat model's name.
    model = speech_model or ("" if speech_url else vlm.model)
    named = bool(speech_model) or not speech_url
    speech = Speech(
        info,
        identity,
        endpoint,
        model,
        full=mode == "full",
        named_model=named,
        required=bool(speech_url),
        engine=engine,
        pieces=pieces,
    )
    return speech, ""


def forget() -> None:
    """Drop the speech tracks this process holds (it then reads them as a new process would)."""
    _TRACKS.clear()


def _span(span: Interval) -> str:
    return f"{format_ts(span.start, 1)}-{format_ts(span.end, 1)}"
