"""A video's sound track as speech models take it: 16 kHz mono samples of a stretch, and WAV bytes of them.

Decoding happens here, beside the frames, so that an agent asks the environment for the audio of
an interval in video time and never opens a file itself. Video time 0 is the first frame's start
(``VideoInfo.start_time`` in the file's own clock), as for frames.
"""

from __future__ import annotations

import io
import os
import wave
from collections.abc import Sequence
from dataclasses import dataclass

import av
import numpy as np
import numpy.typing as npt

from videoatlas.environment.geometry import Interval
from videoatlas.errors import VideoError

RATE = 16_000
"""Samples per second of what is returned: what Whisper-style speech models are trained on."""
WAV_BYTES_PER_S = RATE * 2
"""Bytes one second of 16-bit mono WAV takes at :data:`RATE`."""

Samples = npt.NDArray[np.int16]


class AudioError(VideoError):
    """The sound track is missing or cannot be decoded."""


def has_audio(path: str | os.PathLike[str]) -> bool:
    """Whether the file has an audio stream (False for a file that cannot be opened)."""
    try:
        with av.open(str(path)) as container:
            return bool(container.streams.audio)
    except (av.FFmpegError, OSError):
        return False


def read_audio(path: str | os.PathLike[str], span: Interval, start_time: float = 0.0) -> Samples:
    """16 kHz mono 16-bit samples of ``span`` (video seconds), from the first audio stream of ``path``.

    ``start_time`` is where video time 0 lies in the file's clock. Raises :class:`AudioError` when
    there is no audio stream or it cannot be decoded; a stretch past the track's end is silence-free
    and simply shorter.
    """
    try:
        container = av.open(str(path))
    except (av.FFmpegError, OSError) as exc:
        raise AudioError(f"cannot open {os.fspath(path)} for its audio: {exc}") from None
    with container:
        if not container.streams.audio:
            raise AudioError(f"{os.fspath(path)} has no audio stream")
        stream = container.streams.audio[0]
        resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
        first = start_time + span.start
        if span.start > 1.0:
            container.seek(int(max(0.0, first - 1.0) / float(stream.time_base or 1)), stream=stream)
        pieces: list[Samples] = []
        begin: float | None = None
        try:
            for frame in container.decode(stream):
                if frame.time is None:
                    continue
                if frame.time > start_time + span.end:
                    break
                for out in resampler.resample(frame):
                    if begin is None:
                        begin = float(frame.time)
                    pieces.append(out.to_ndarray().reshape(-1).astype(np.int16))
            for out in resampler.resample(None):
                pieces.append(out.to_ndarray().reshape(-1).astype(np.int16))
        except av.FFmpegError as exc:
            raise AudioError(f"the audio of {os.fspath(path)} cannot be decoded: {exc}") from None
    if not pieces or begin is None:
        return np.zeros(0, np.int16)
    samples = np.concatenate(pieces)
    skip = max(0, round((first - begin) * RATE))
    keep = max(0, round(span.span * RATE))
    return samples[skip : skip + keep]


@dataclass(frozen=True, slots=True)
class AudioPiece:
    """One file's stretch of a video's sound: where it plays in video time, and where video time 0 is in the file."""

    path: str
    offset: float
    duration: float
    start_time: float = 0.0
    has_audio: bool = True


def read_pieces(pieces: Sequence[AudioPiece], span: Interval) -> Samples:
    """16 kHz mono samples of ``span`` over files played back to back (a file without sound: silence).

    Each piece's stretch is as long as the piece plays (cut or padded with silence), so that the
    samples stay in video time across the joins.
    """
    out: list[Samples] = []
    for piece in pieces:
        lo, hi = max(span.start, piece.offset), min(span.end, piece.offset + piece.duration)
        if hi <= lo:
            continue
        want = round((hi - lo) * RATE)
        got = (
            read_audio(piece.path, Interval(lo - piece.offset, hi - piece.offset), piece.start_time)
            if piece.has_audio
            else np.zeros(0, np.int16)
        )
        out.append(
            np.concatenate([got[:want], np.zeros(max(0, want - len(got)), np.int16)]) if len(pieces) > 1 else got
        )
    return np.concatenate(out) if out else np.zeros(0, np.int16)


def wav_bytes(samples: Samples) -> bytes:
    """A 16 kHz mono 16-bit WAV file of ``samples``."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(RATE)
        wav.writeframes(samples.astype("<i2").tobytes())
    return out.getvalue()


def windows(span: Interval, length_s: float) -> list[Interval]:
    """``span`` cut into consecutive windows of at most ``length_s`` seconds (the last may be shorter)."""
    if length_s <= 0:
        raise ValueError("windows need a positive length")
    out = []
    t = span.start
    while t < span.end - 1e-6:
        out.append(Interval(t, min(span.end, t + length_s)))
        t += length_s
    return out
