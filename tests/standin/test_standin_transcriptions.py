"""The stand-in's ``/v1/audio/transcriptions``: vLLM's protocol, served by a real speech model.

Whisper tiny.en hears the spoken test video's track; the response shapes, fields and errors are
vLLM 0.33's (multipart form in, ``json``/``text``/``verbose_json`` out as JSON, OpenAI error bodies, its refusals).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from videoatlas.environment.audio import read_audio, wav_bytes
from videoatlas.environment.geometry import Interval
from videoatlas.synth.speech import DURATION_S, write_speech_video
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_speech_video(tmp_path_factory.mktemp("ear") / "speech.mp4")


@pytest.fixture(scope="module")
def track(video: Path) -> bytes:
    return wav_bytes(read_audio(video, Interval(0.0, DURATION_S)))


@pytest.fixture(scope="module")
def line(video: Path) -> bytes:
    """The second spoken line alone (8-16 s)."""
    return wav_bytes(read_audio(video, Interval(8.0, 16.0)))


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with RunningServer(StandinServer(StandinConfig())) as server:
        yield server.base_url + "/audio/transcriptions"


def post(url: str, audio: bytes | None, **form: str) -> httpx.Response:
    """A multipart request, with ``audio`` as its file (None: another part, so the form has no file)."""
    files = {"file": ("a.wav", audio, "audio/wav")} if audio is not None else {"other": ("x.txt", b"x", "text/plain")}
    return httpx.post(url, data=form, files=files, timeout=60)


def test_verbose_json_gives_timed_segments_of_what_was_said(url: str, track: bytes) -> None:
    reply = post(url, track, response_format="verbose_json", language="en")
    assert reply.status_code == 200
    body = reply.json()
    assert set(body) == {"duration", "language", "text", "segments", "words"}
    assert body["duration"] == 24.0 and body["language"] == "en" and body["words"] is None
    fields = {"id", "seek", "start", "end", "text", "tokens", "temperature", "avg_logprob", "compression_ratio"}
    assert all(fields | {"no_speech_prob"} == set(s) for s in body["segments"])
    starts = [s["start"] for s in body["segments"]]
    assert starts == sorted(starts) and all(0 <= s["start"] < s["end"] <= 24.0 for s in body["segments"])
    # The facts the questions ask about, said and never shown: a city, a name, a room number.
    assert all(fact in body["text"] for fact in ("Bristol", "Maria", "400"))
    said = [s["text"] for s in body["segments"] if "Maria" in s["text"]]
    assert said and all(s["start"] <= 10.0 for s in body["segments"] if "Maria" in s["text"])


def test_json_and_text_formats_both_answer_json_as_vllm_does(url: str, video: Path) -> None:
    short = wav_bytes(read_audio(video, Interval(9.0, 11.0)))
    plain = post(url, short).json()
    assert set(plain) == {"text", "usage"} and plain["usage"] == {"type": "duration", "seconds": 2}
    assert post(url, short, response_format="text").json() == plain
    # A language Whisper knows is taken, as vLLM takes it; this English-only model still hears English.
    assert post(url, short, language="fr", response_format="verbose_json").json()["language"] == "fr"


@pytest.mark.parametrize(
    ("audio", "form", "status", "kind", "param"),
    [
        (b"RIFF", {"model": "whisper-large"}, 404, "NotFoundError", "model"),
        (None, {}, 400, "BadRequestError", "file"),
        (None, {"file": "a.wav"}, 422, "BadRequestError", "file"),
        (b"not audio at all", {}, 400, "BadRequestError", "file"),
        (b"RIFF", {"response_format": "xml"}, 400, "BadRequestError", "response_format"),
        (b"\0" * (25 * 1024 * 1024 + 1), {}, 400, "BadRequestError", "audio_filesize_mb"),
        # What vLLM 0.33's request model takes but its serving code refuses before inference, refused alike.
        (b"RIFF", {"response_format": "srt"}, 400, "BadRequestError", None),
        (b"RIFF", {"response_format": "vtt"}, 400, "BadRequestError", None),
        (b"RIFF", {"response_format": "diarized_json"}, 400, "BadRequestError", None),
        (b"RIFF", {"language": "xx"}, 400, "BadRequestError", "language"),
        (b"RIFF", {"temperature": "2.5"}, 400, "BadRequestError", "temperature"),
        (b"RIFF", {"temperature": "-0.1"}, 400, "BadRequestError", "temperature"),
        (b"RIFF", {"timestamp_granularities[]": "char"}, 400, "BadRequestError", "timestamp_granularities[]"),
    ],
)
def test_bad_requests_get_openai_error_bodies(
    url: str, audio: bytes | None, form: dict[str, str], status: int, kind: str, param: str | None
) -> None:
    reply = post(url, audio, **form)
    assert reply.status_code == status
    error = reply.json()["error"]
    assert (error["type"], error["param"], error["code"]) == (kind, param, status) and error["message"]


def test_a_server_without_a_speech_model_has_no_route(tmp_path: Path) -> None:
    with RunningServer(StandinServer(StandinConfig(speech=False))) as server:
        assert post(server.base_url + "/audio/transcriptions", b"RIFF").status_code == 404
