"""The run's speech track over real HTTP and a real run store: lazy, cached, resumable, and robust to bad input.

A fake transcription server counts the requests that carry audio and answers each with one timed
stretch of speech (or as told: no route, no segment times, a size limit, an error). The video has
75 s of sound: three chunks (0-30, 30-60, 60-75 s).
"""

from __future__ import annotations

import asyncio
import io
import wave
from collections.abc import AsyncIterator, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from aiohttp import web
from sqlalchemy.engine import Engine

from db_helpers import rows, sqlite_url
from http_helpers import listening
from videoatlas.environment.geometry import Interval
from videoatlas.environment.video import probe, video_identity
from videoatlas.llm.settings import EndpointSettings
from videoatlas.persistence.engine import open_engine
from videoatlas.runtime import speech as speech_module
from videoatlas.runtime.speech import Speech, Where, open_speech

pytestmark = pytest.mark.e2e
HERE = Where("test", 1)


def _write(path: Path, seconds: float, audio: str | None) -> Path:
    """A small video of ``seconds``: grey frames at 2 fps, and a tone (``aac``), broken bytes (``mp3``) or no sound."""
    rng = np.random.default_rng(0)
    with av.open(str(path), "w") as container:
        video = container.add_stream("libx264", rate=2)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        aac = container.add_stream("aac", rate=16000, layout="mono") if audio == "aac" else None
        mp3 = container.add_stream("mp3", rate=16000, layout="mono") if audio == "mp3" else None
        for i in range(round(seconds * 2)):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), 90, np.uint8), format="rgb24")
            frame.pts, frame.time_base = i, Fraction(1, 2)
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
        if aac is not None:
            tone = (np.sin(np.arange(round(seconds * 16000)) * 2 * np.pi * 440 / 16000) * 8000).astype(np.int16)
            for first in range(0, len(tone), 1024):
                piece = av.AudioFrame.from_ndarray(
                    tone[first : first + 1024].reshape(1, -1), format="s16", layout="mono"
                )
                piece.sample_rate, piece.pts, piece.time_base = 16000, first, Fraction(1, 16000)
                container.mux(aac.encode(piece))
            container.mux(aac.encode(None))
        elif mp3 is not None:  # declared, but no decoder reads these bytes
            for i in range(200):
                packet = av.Packet(bytes(rng.integers(0, 256, 400, dtype=np.uint8)))
                packet.stream, packet.pts, packet.dts = mp3, i * 1152, i * 1152
                packet.time_base = Fraction(1, 16000)
                container.mux(packet)
    return path


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("speech_track")
    return {
        "tone": _write(root / "tone.mp4", 75.0, "aac"),
        "mute": _write(root / "mute.mp4", 10.0, None),
        "broken": _write(root / "broken.mkv", 10.0, "mp3"),
    }


@pytest.fixture(autouse=True)
def _fresh_process() -> Iterator[None]:
    speech_module.forget()
    yield
    speech_module.forget()


class Fake:
    """A transcription server: each request with audio numbered, heard as one stretch from 2 s to 6 s of the clip."""

    def __init__(self, status: int = 200, timed: bool = True, limit_s: float | None = None) -> None:
        self.status, self.timed, self.limit_s = status, timed, limit_s
        self.uploads: list[float] = []
        """Seconds of audio of each request, in order."""
        self.hold_from: int | None = None
        """Requests from this number on (1 first) wait for :attr:`release`."""
        self.release = asyncio.Event()

    async def transcriptions(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form["file"]
        assert isinstance(upload, web.FileField)
        with wave.open(io.BytesIO(upload.file.read())) as wav:
            seconds = wav.getnframes() / wav.getframerate()
        self.uploads.append(seconds)
        n = len(self.uploads)
        if self.hold_from is not None and n >= self.hold_from:
            await self.release.wait()
        if self.limit_s is not None and seconds > self.limit_s:
            return _error(400, "Maximum file size exceeded")
        if self.status != 200:
            return _error(self.status, "no such route" if self.status == 404 else "overloaded")
        text = f"speech number {n}"
        if not self.timed:
            return web.json_response({"text": text})
        return web.json_response({"text": text, "segments": [{"id": 0, "start": 2.0, "end": 6.0, "text": text}]})

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "fake-whisper", "object": "model"}]})


def _error(status: int, message: str) -> web.Response:
    body = {"error": {"message": message, "type": "BadRequestError", "param": None, "code": status}}
    return web.json_response(body, status=status)


async def _serve(fake: Fake) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/v1/audio/transcriptions", fake.transcriptions)
    app.router.add_get("/v1/models", fake.models)
    async with listening(app) as url:
        try:
            yield f"{url}/v1"
        finally:
            fake.release.set()  # a request still held open returns before the server goes


@pytest.fixture
async def served() -> AsyncIterator[tuple[Fake, str]]:
    fake = Fake()
    async for url in _serve(fake):
        yield fake, url


def ears(video: Path, url: str, mode: str = "auto", engine: Engine | None = None, **kw: Any) -> Speech:
    """The speech track of ``video``, heard at ``url`` (the VLM's endpoint is elsewhere and never asked)."""
    vlm = EndpointSettings(base_url="http://127.0.0.1:9/v1", model="chat", max_retries=0, backoff_s=0.01)
    speech, why = open_speech(mode, probe(video), video_identity(video), vlm, speech_url=url, engine=engine, **kw)
    assert speech is not None, why
    return speech


def said(heard: Any) -> list[tuple[float, float, str]]:
    return [(ln.start, ln.end, ln.text) for ln in heard.subtitles.lines]


async def test_speech_is_heard_lazily_for_what_is_looked_at_once_per_chunk_and_then_read_from_the_store(
    videos: dict[str, Path], served: tuple[Fake, str], db_url: str
) -> None:
    fake, url = served
    engine = open_engine(db_url)
    try:
        first = ears(videos["tone"], url, engine=engine)
        heard = await first.hear([Interval(35.0, 40.0)], HERE)
        # One chunk, 30-60 s: one request, its stretch placed in video time; its cost in the ledger.
        assert fake.uploads == [30.0] and said(heard) == [(32.0, 36.0, "speech number 1")]
        assert (heard.cost.transcriptions, heard.cost.audio_s) == (1, 30.0) and heard.cost.transcribe_s > 0
        assert first.model == "fake-whisper"  # the speech server's own model, asked once
        # The whole video at a glance: a sample, its middle chunk, heard already; nothing sent, nothing spent.
        again = await first.hear([Interval(0.0, 75.0)], HERE)
        assert fake.uploads == [30.0] and again.cost.transcriptions == 0 and said(again) == said(heard)
        # Listening to all of it: the two chunks not heard yet.
        whole = await first.hear([Interval(0.0, 75.0)], HERE, whole=True)
        assert fake.uploads == [30.0, 30.0, 15.0] and whole.cost.audio_s == 45.0
        assert [a for a, _, _ in said(whole)] == [2.0, 32.0, 62.0]
        await first.aclose()
        # Another run (a new process, another agent, a resume): every chunk from the store, no request.
        speech_module.forget()
        second = ears(videos["tone"], url, engine=engine)
        reread = await second.hear([Interval(0.0, 75.0)], HERE, whole=True)
        assert len(fake.uploads) == 3 and reread.cost.transcriptions == 0 and said(reread) == said(whole)
        await second.aclose()
        assert rows(db_url, "SELECT COUNT(*) FROM va_speech_chunks")[0][0] == 3
    finally:
        engine.dispose()


async def test_a_full_pass_interrupted_midway_goes_on_from_the_chunks_it_stored(
    videos: dict[str, Path], served: tuple[Fake, str], db_url: str
) -> None:
    fake, url = served
    fake.hold_from = 2  # the second chunk's request hangs: the pass is stopped there
    engine = open_engine(db_url)
    try:
        first = ears(videos["tone"], url, mode="full", engine=engine)
        task = asyncio.ensure_future(first.hear([Interval(0.0, 1.0)], HERE))
        for _ in range(500):
            if len(fake.uploads) == 2:
                break
            await asyncio.sleep(0.02)
        assert len(fake.uploads) == 2, "the pass did not reach its second chunk"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await first.aclose()
        assert rows(db_url, "SELECT chunk FROM va_speech_chunks") == [(0,)]
        fake.hold_from = None
        speech_module.forget()
        resumed = ears(videos["tone"], url, mode="full", engine=engine)
        heard = await resumed.hear([Interval(0.0, 1.0)], HERE)  # full: every chunk, whatever is looked at
        assert fake.uploads == [30.0, 30.0, 30.0, 15.0]  # chunk 0 was not sent again
        assert [a for a, _, _ in said(heard)] == [2.0, 32.0, 62.0] and heard.cost.transcriptions == 2
        await resumed.aclose()
    finally:
        engine.dispose()


def test_no_audio_stream_speech_off_or_a_subtitle_file_open_no_ears(videos: dict[str, Path]) -> None:
    vlm = EndpointSettings(base_url="http://127.0.0.1:9/v1", model="chat")
    mute, tone = probe(videos["mute"]), probe(videos["tone"])
    assert open_speech("auto", mute, "x", vlm) == (None, "the video has no audio stream: no speech track")
    assert open_speech("off", tone, "x", vlm)[1] == "speech is off for this run (--speech off)"
    assert "subtitle file" in open_speech("full", tone, "x", vlm, has_subtitles=True)[1]
    speech, why = open_speech("auto", tone, "x", vlm)
    assert speech is not None and why == "" and speech.model == "chat"  # one server: the chat model's name


@pytest.mark.parametrize(
    ("video", "status", "says"), [("broken", 200, "cannot be decoded"), ("tone", 404, "no transcription route")]
)
async def test_undecodable_sound_or_no_route_withdraws_speech_in_one_line_and_asks_no_more(
    videos: dict[str, Path], served: tuple[Fake, str], video: str, status: int, says: str
) -> None:
    fake, url = served
    fake.status = status
    speech = ears(videos[video], url, speech_model="whisper")
    heard = await speech.hear([Interval(0.0, 5.0)], HERE)
    assert heard.subtitles is None and speech.said() is None
    [line] = heard.repairs
    assert line.kind == "fallback" and line.detail.startswith("speech withdrawn for this run: ") and says in line.detail
    assert "\n" not in line.detail and (line.node, line.round) == ("test", 1)
    sent = len(fake.uploads)
    later = await speech.hear([Interval(40.0, 45.0)], HERE)
    assert later.subtitles is None and not later.repairs and len(fake.uploads) == sent
    await speech.aclose()


async def test_a_reply_without_segment_times_is_placed_at_its_chunk_with_a_line(
    videos: dict[str, Path], served: tuple[Fake, str]
) -> None:
    fake, url = served
    fake.timed = False
    speech = ears(videos["tone"], url, speech_model="whisper")
    heard = await speech.hear([Interval(61.0, 62.0)], HERE)
    assert said(heard) == [(60.0, 75.0, "speech number 1")] and fake.uploads == [15.0]
    [line] = heard.repairs
    assert line.kind == "fallback" and "no segment times for 01:00.0-01:15.0" in line.detail
    await speech.aclose()


async def test_a_chunk_refused_as_too_large_is_heard_in_halves(
    videos: dict[str, Path], served: tuple[Fake, str]
) -> None:
    fake, url = served
    fake.limit_s = 20.0
    speech = ears(videos["tone"], url, speech_model="whisper")
    heard = await speech.hear([Interval(1.0, 2.0)], HERE)
    assert fake.uploads == [30.0, 15.0, 15.0]
    assert said(heard) == [(2.0, 6.0, "speech number 2"), (17.0, 21.0, "speech number 3")]
    assert heard.cost.transcriptions == 3 and heard.cost.audio_s == 30.0
    [line] = heard.repairs
    assert line.kind == "dropped" and "refused as too large" in line.detail
    await speech.aclose()


async def test_a_chunk_the_server_fails_on_is_left_unheard_and_asked_again_later(
    videos: dict[str, Path], served: tuple[Fake, str], tmp_path: Path
) -> None:
    fake, url = served
    fake.status = 503
    engine = open_engine(sqlite_url(tmp_path / "runs.db"))
    try:
        speech = ears(videos["tone"], url, speech_model="whisper", engine=engine)
        failed = await speech.hear([Interval(1.0, 2.0)], HERE)
        [line] = failed.repairs
        assert line.kind == "dropped" and line.detail.startswith("speech of 00:00.0-00:30.0 not heard: ")
        assert failed.subtitles is not None and len(failed.subtitles) == 0 and not speech.withdrawn
        fake.status = 200
        heard = await speech.hear([Interval(1.0, 2.0)], HERE)
        assert said(heard) == [(2.0, 6.0, "speech number 2")] and not heard.repairs
        await speech.aclose()
    finally:
        engine.dispose()


async def test_a_manifest_is_heard_file_by_file_in_joined_time_a_file_without_sound_as_silence(
    videos: dict[str, Path], served: tuple[Fake, str], tmp_path: Path
) -> None:
    from videoatlas.environment.concat import audio_pieces, open_source, write_manifest

    fake, url = served
    manifest = write_manifest(tmp_path / "joined.concat.json", [videos["mute"], videos["tone"]])  # 10 s + 75 s
    source = open_source(manifest)
    try:
        pieces = audio_pieces(source)
        assert [(p.offset, p.has_audio) for p in pieces] == [(0.0, False), (10.0, True)]
        vlm = EndpointSettings(base_url="http://127.0.0.1:9/v1", model="chat", max_retries=0)
        speech, why = open_speech(
            "auto", source.info, source.identity, vlm, speech_url=url, speech_model="whisper", pieces=pieces
        )
        assert speech is not None, why
        heard = await speech.hear([Interval(0.0, 1.0)], HERE)  # chunk 0: 10 s of silence, then 20 s of tone
        assert fake.uploads == [30.0] and said(heard) == [(2.0, 6.0, "speech number 1")] and not heard.repairs
        last = await speech.hear([Interval(80.0, 81.0)], HERE)  # chunk 2, 60-85 s: the tone's last 25 s
        assert fake.uploads == [30.0, 25.0]
        assert said(last)[-1] == (62.0, 66.0, "speech number 2")
        await speech.aclose()
    finally:
        source.close()
