"""A video's speech track: which stretches of the sound track to transcribe for a view, and what was heard.

The track is cut into fixed chunks of :data:`CHUNK_S` seconds of video time (chunk ``i`` covers
``[i * CHUNK_S, (i + 1) * CHUNK_S)``, the last one shorter): a chunk is what is transcribed, cached
and reused, so that any interval is heard at most once per video content, whoever asks. Thirty
seconds is Whisper's own window (one decode a chunk) and 0.96 MB of 16 kHz WAV, far inside the
transcription route's limits.

Which chunks a view needs (:func:`chunks_to_hear`): every chunk a short stretch overlaps, and only
the chunk at the middle of a stretch longer than :data:`WIDE_CHUNKS` chunks, as a frame shows one
moment of a wide cell. Short or wide is the stretch's length, not how it falls on the chunks' clock:
two cells of one grid are heard alike wherever the chunk boundaries fall. An agent looking at a
whole long video at once therefore hears a sample of it (a grid of an hour in cells of a minute or
less is heard whole), and hears the rest as it narrows down: speech is fetched lazily, for what is
looked at.

:class:`SpeechTrack` holds the chunks heard so far and answers like subtitles do
(:class:`~videoatlas.environment.subtitles.Subtitles`), so every view that shows subtitles can show
speech the same way. Pure: the transcribing and the cache are the runtime's (:mod:`videoatlas.runtime.speech`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from videoatlas.environment.geometry import Interval
from videoatlas.environment.subtitles import SubtitleLine, Subtitles

CHUNK_S = 30.0
"""Seconds of video time one chunk of the speech track covers."""
WIDE_CHUNKS = 2
"""A stretch longer than this many chunks is heard at its middle only (a sample, as a frame is of a wide cell)."""


def chunk_count(duration: float) -> int:
    """How many chunks a video of ``duration`` seconds has (at least one)."""
    return max(1, math.ceil(duration / CHUNK_S - 1e-9))


def chunk_span(index: int, duration: float) -> Interval:
    """The video time chunk ``index`` covers (the last chunk ends at the video's end)."""
    start = index * CHUNK_S
    return Interval(start, max(start, min(duration, start + CHUNK_S)))


def spread_chunks(duration: float, most: int) -> list[int]:
    """Every chunk of the track when it has at most ``most``, else ``most`` of them spread evenly, in order."""
    count = chunk_count(duration)
    if most <= 0:
        return []
    if count <= most:
        return list(range(count))
    return sorted({int((i + 0.5) * count / most) for i in range(most)})


def track_spans(duration: float, most: int) -> list[Interval]:
    """The stretches of :func:`spread_chunks`: what an agent that reads the track first listens to."""
    return [chunk_span(i, duration) for i in spread_chunks(duration, most)]


def chunks_over(span: Interval, duration: float) -> list[int]:
    """The chunks ``span`` overlaps (a zero-length span: the chunk it lies in)."""
    last = chunk_count(duration) - 1
    first = min(last, max(0, int(span.start // CHUNK_S)))
    end = span.end if span.span > 0 else span.start
    stop = min(last, max(first, math.ceil(end / CHUNK_S - 1e-9) - 1))
    return list(range(first, stop + 1))


def chunks_to_hear(spans: Iterable[Interval], duration: float, whole: bool = False) -> list[int]:
    """The chunks a view of ``spans`` needs, in order.

    ``whole``: every chunk of every span (a request to listen to those stretches). Otherwise a span
    longer than :data:`WIDE_CHUNKS` chunks gives only the chunk at its middle, and a shorter one every
    chunk it overlaps (up to one more than :data:`WIDE_CHUNKS`, where it straddles their boundaries).
    """
    wanted: set[int] = set()
    for span in spans:
        over = chunks_over(span, duration)
        if whole or span.span <= WIDE_CHUNKS * CHUNK_S + 1e-9:
            wanted.update(over)
        else:
            wanted.update(chunks_over(Interval(span.mid, span.mid), duration))
    return sorted(wanted)


def clip_to_chunk(lines: Iterable[SubtitleLine], index: int, duration: float) -> list[SubtitleLine]:
    """``lines`` kept inside chunk ``index`` (a segment the model placed past the chunk is cut at its end)."""
    span = chunk_span(index, duration)
    out = []
    for ln in lines:
        start, end = max(span.start, ln.start), min(span.end, ln.end)
        if ln.text.strip() and end >= start:
            out.append(SubtitleLine(start, end, ln.text.strip()))
    return out


class SpeechTrack:
    """The chunks of one video's speech heard so far, and their lines as subtitles."""

    def __init__(self, duration: float) -> None:
        self.duration = duration
        self._heard: dict[int, tuple[SubtitleLine, ...]] = {}
        self._subtitles: Subtitles | None = None

    def __contains__(self, index: object) -> bool:
        return index in self._heard

    def add(self, index: int, lines: Sequence[SubtitleLine]) -> None:
        """Keep what chunk ``index`` said (its lines clipped to the chunk)."""
        self._heard[index] = tuple(clip_to_chunk(lines, index, self.duration))
        self._subtitles = None

    def missing(self, chunks: Iterable[int]) -> list[int]:
        """Those of ``chunks`` not heard yet."""
        return [i for i in chunks if i not in self._heard]

    @property
    def heard(self) -> list[int]:
        """The chunks heard so far, in order."""
        return sorted(self._heard)

    def subtitles(self) -> Subtitles:
        """Everything heard so far, as subtitles (a chunk heard as silence adds no line)."""
        if self._subtitles is None:
            self._subtitles = Subtitles([ln for i in sorted(self._heard) for ln in self._heard[i]])
        return self._subtitles
