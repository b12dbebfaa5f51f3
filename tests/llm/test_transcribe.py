"""The transcription client over real HTTP: chunks under the upload limit, segments in video time, the
30 s windows when a server gives no segment times, and a missing route told apart from other failures."""

from __future__ import annotations

import io
import wave
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
from aiohttp import web

from http_helpers import listening
from videoatlas.environment.audio import RATE
from videoatlas.errors import EndpointError
from videoatlas.llm.settings import EndpointSettings
from videoatlas.llm.transcribe import MAX_UPLOAD_BYTES, Transcriber, TranscriptionUnavailable

pytestmark = pytest.mark.e2e


class Fake:
    """A transcription server that says how long each upload was, with or without segment times."""

    def __init__(self, timed: bool, status: int = 200, limit_s: float | None = None) -> None:
        self.timed, self.status, self.limit_s = timed, status, limit_s
        self.uploads: list[tuple[int, float, dict[str, str]]] = []

    async def handle(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form["file"]
        assert isinstance(upload, web.FileField)
        data = upload.file.read()
        with wave.open(io.BytesIO(data)) as wav:
            seconds = wav.getnframes() / wav.getframerate()
            assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (RATE, 1, 2)
        fields = {k: str(v) for k, v in form.items() if k != "file"}
        self.uploads.append((len(data), seconds, fields))
        if self.limit_s is not None and seconds > self.limit_s:  # as vLLM words it, with a 400
            return web.json_response(
                {"error": {"message": "Maximum file size exceeded", "type": "BadRequestError", "param": None,
                           "code": 400}}, status=400,
            )  # fmt: skip
        if self.status != 200:
            return web.json_response(
                {"error": {"message": "no", "type": "x", "param": None, "code": 1}}, status=self.status
            )
        text = f"heard {seconds:.0f} seconds"
        if not self.timed:
            return web.json_response({"text": text, "usage": {"type": "duration", "seconds": round(seconds)}})
        segment = {"id": 0, "start": 1.0, "end": seconds + 5.0, "text": f" {text}"}  # ends past the clip: cut
        return web.json_response({"duration": str(seconds), "language": "en", "text": text, "segments": [segment]})


async def serve(fake: Fake) -> AsyncIterator[str]:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/audio/transcriptions", fake.handle)
    async with listening(app) as url:
        yield f"{url}/v1"


async def transcribe(fake: Fake, seconds: float, offset: float, **settings: Any) -> Any:
    async for base in serve(fake):
        ear = Transcriber(EndpointSettings(base_url=base, **settings), "whisper")
        try:
            return await ear.transcribe(np.zeros(round(seconds * RATE), np.int16), offset, RATE)
        finally:
            await ear.close()
    raise AssertionError("the server did not start")


async def test_long_audio_goes_up_in_chunks_under_25_mb_and_segments_land_in_video_time() -> None:
    fake = Fake(timed=True)
    got = await transcribe(fake, 1300.0, 100.0)
    assert [round(s) for _, s, _ in fake.uploads] == [600, 600, 100]
    assert all(size <= MAX_UPLOAD_BYTES for size, _, _ in fake.uploads)
    assert {f["response_format"] for _, _, f in fake.uploads} == {"verbose_json"}
    assert {f["timestamp_granularities[]"] for _, _, f in fake.uploads} == {"segment"}
    assert [(s.start, s.end) for s in got.segments] == [(101.0, 700.0), (701.0, 1300.0), (1301.0, 1400.0)]
    assert got.timed and got.requests == 3


async def test_without_segment_times_the_clip_is_sent_again_in_30_s_windows_at_known_offsets() -> None:
    fake = Fake(timed=False)
    got = await transcribe(fake, 70.0, 10.0)
    assert [round(s) for _, s, _ in fake.uploads] == [70, 30, 30, 10]
    assert [(s.start, s.end, s.text) for s in got.segments] == [
        (10.0, 40.0, "heard 30 seconds"),
        (40.0, 70.0, "heard 30 seconds"),
        (70.0, 80.0, "heard 10 seconds"),
    ]
    assert not got.timed and got.requests == 4


@pytest.mark.parametrize("status", [404, 405])
async def test_a_missing_route_is_told_apart(status: int) -> None:
    with pytest.raises(TranscriptionUnavailable, match="no transcription route"):
        await transcribe(Fake(timed=True, status=status), 5.0, 0.0)


async def test_a_server_error_is_retried_then_reported_as_an_endpoint_error() -> None:
    fake = Fake(timed=True, status=503)
    with pytest.raises(EndpointError, match="after 2 tries") as caught:
        await transcribe(fake, 5.0, 0.0, max_retries=1, backoff_s=0.01)
    assert not isinstance(caught.value, TranscriptionUnavailable) and len(fake.uploads) == 2


async def test_a_clip_refused_as_too_large_is_split_in_halves_until_the_server_takes_it() -> None:
    fake = Fake(timed=True, limit_s=10.0)
    got = await transcribe(fake, 30.0, 60.0)
    # 30 s refused, its two 15 s halves refused, their four 7.5 s quarters heard, each at its own offset.
    assert [round(s, 1) for _, s, _ in fake.uploads] == [30.0, 15.0, 7.5, 7.5, 15.0, 7.5, 7.5]
    assert got.requests == 7 and got.splits == 3 and got.timed
    assert [s.start for s in got.segments] == [61.0, 68.5, 76.0, 83.5]
    assert all(s.end <= start + 7.5 for s, start in zip(got.segments, (60.0, 67.5, 75.0, 82.5), strict=True))


async def test_a_clip_refused_even_at_one_second_is_an_endpoint_error() -> None:
    fake = Fake(timed=True, limit_s=0.5)
    with pytest.raises(EndpointError, match="refused even for"):
        await transcribe(fake, 3.0, 0.0)
