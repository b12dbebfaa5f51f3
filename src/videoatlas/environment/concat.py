"""Several video files played back to back as one video, described by a small JSON manifest.

The benchmarks' 10-hour variants put a target video among distractor videos. Re-encoding ten hours
of footage for every target would take hours per question, so a variant is a *manifest* instead::

    {"format": "videoatlas-concat", "version": 1,
     "segments": [{"path": "videos/a.mp4"}, {"path": "videos/b.mp4"}, ...]}

Paths are relative to the manifest's folder (or absolute). :func:`open_source` opens a manifest as a
:class:`ConcatSource`, which answers every :class:`~videoatlas.environment.frames.FrameSource`
request by routing each window to the segment holding its target time. Segments may differ in size
and frame rate: frames are scaled to fit the cell, as for any video.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from videoatlas.environment.audio import AudioPiece
from videoatlas.environment.files import check_file
from videoatlas.environment.frames import FrameLRU, FrameSource
from videoatlas.environment.geometry import Interval
from videoatlas.environment.readers import DEFAULT_BACKEND, ReaderStats, sum_stats
from videoatlas.environment.video import DecodedFrame, VideoInfo, probe
from videoatlas.errors import BadInputError, VideoError

MANIFEST_FORMAT = "videoatlas-concat"
MANIFEST_SUFFIX = ".concat.json"


@dataclass(frozen=True, slots=True)
class Segment:
    """One file of a concatenation and where it starts on the joined timeline."""

    path: Path
    offset: float
    duration: float


def is_manifest(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a concatenation manifest (by its suffix)."""
    return str(path).endswith(MANIFEST_SUFFIX)


def read_manifest(path: str | os.PathLike[str]) -> list[Path]:
    """The segment files a manifest lists, resolved against its folder; a clear error if malformed."""
    p = check_file(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise VideoError(f"{p}: not a readable concatenation manifest ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise VideoError(f'{p}: not a concatenation manifest (expected "format": "{MANIFEST_FORMAT}")')
    segments = data.get("segments")
    if not isinstance(segments, list) or not segments:
        raise VideoError(f'{p}: a concatenation manifest needs a non-empty "segments" list')
    out = []
    for n, seg in enumerate(segments):
        if not isinstance(seg, dict) or not isinstance(seg.get("path"), str):
            raise VideoError(f'{p}: segment {n} needs a "path" string')
        seg_path = Path(seg["path"])
        out.append(seg_path if seg_path.is_absolute() else p.parent / seg_path)
    return out


def write_manifest(path: str | os.PathLike[str], segments: Sequence[str | os.PathLike[str]]) -> Path:
    """Write a manifest listing ``segments`` (stored relative to the manifest's folder when possible)."""
    p = Path(path)
    if not is_manifest(p):
        raise BadInputError(f"a concatenation manifest's name must end in {MANIFEST_SUFFIX}: {p}")
    p.parent.mkdir(parents=True, exist_ok=True)
    entries = []
    for seg in segments:
        resolved = Path(seg).resolve()
        try:
            stored = os.path.relpath(resolved, p.parent.resolve())
        except ValueError:  # another drive on Windows
            stored = str(resolved)
        entries.append({"path": stored})
    p.write_text(json.dumps({"format": MANIFEST_FORMAT, "version": 1, "segments": entries}, indent=1) + "\n")
    return p


class ConcatSource(FrameSource):
    """A :class:`FrameSource` over the files of a manifest, joined end to end."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        backend: str = DEFAULT_BACKEND,
        cache: FrameLRU | None = None,
        max_readers: int = 4,
        executor: Executor | None = None,
    ) -> None:
        files = read_manifest(path)
        self.backend = backend
        self.cache = cache if cache is not None else FrameLRU()
        self._use_executor(executor, max_readers)
        self.parts: list[FrameSource] = []
        self.segments: list[Segment] = []
        offset = 0.0
        try:
            for f in files:
                part = FrameSource(f, backend, self.cache, max(1, max_readers // 2), self.executor)
                self.parts.append(part)
                self.segments.append(Segment(Path(f), offset, part.duration))
                offset += part.duration
        except BaseException:
            self.close()
            raise
        first = self.parts[0].info
        self.info = VideoInfo(
            path=str(Path(path)),
            duration=offset,
            fps=max(p.info.fps for p in self.parts),
            frame_count=sum(p.info.frame_count for p in self.parts),
            width=max(p.info.width for p in self.parts),
            height=max(p.info.height for p in self.parts),
            has_audio=any(p.info.has_audio for p in self.parts),
            codec=first.codec if all(p.info.codec == first.codec for p in self.parts) else "mixed",
            start_time=0.0,
        )
        digest = hashlib.sha256(b"videoatlas-concat-v1")
        for part in self.parts:
            digest.update(f"{part.identity}:{part.duration!r};".encode())
        self.identity = digest.hexdigest()[:32]
        self._starts = [s.offset for s in self.segments]

    def stats(self) -> ReaderStats:
        """Decoder work summed over every segment."""
        return sum_stats(part.stats() for part in self.parts)

    def close(self) -> None:
        """Close every segment's readers and the owned thread pool."""
        for part in self.parts:
            part.close()
        self._close_executor()

    def segment_at(self, t: float) -> int:
        """Index of the segment playing at joined time ``t`` (the later one at a boundary)."""
        return max(0, min(len(self.segments) - 1, bisect.bisect_right(self._starts, t) - 1))

    def _fetch(
        self,
        windows: Sequence[Interval],
        targets: Sequence[float],
        box: int,
        kind: str,
        allow_keyframes: bool,
    ) -> list[DecodedFrame]:
        self._check_request(windows, box)
        by_part: dict[int, list[int]] = {}
        for i, t in enumerate(targets):
            by_part.setdefault(self.segment_at(t), []).append(i)
        out: list[DecodedFrame | None] = [None] * len(windows)
        for index, members in by_part.items():
            seg, part = self.segments[index], self.parts[index]
            local_windows, local_targets = [], []
            for i in members:
                # A window crossing a boundary is cut to the segment its target lies in.
                lo = max(0.0, windows[i].start - seg.offset)
                hi = min(seg.duration, windows[i].end - seg.offset)
                target = min(max(targets[i] - seg.offset, lo), hi)
                if hi <= lo:  # the target sits exactly on the segment's end
                    lo = max(0.0, hi - min(seg.duration, 1e-3))
                local_windows.append(Interval(lo, hi))
                local_targets.append(target)
            frames = part._fetch(local_windows, local_targets, box, kind, allow_keyframes)
            for i, frame in zip(members, frames, strict=True):
                out[i] = replace(frame, time=frame.time + seg.offset)
        return [f for f in out if f is not None]

    def describe(self) -> dict[str, Any]:
        """The segments with their offsets, for ``probe --json``."""
        return {"segments": [{"path": str(s.path), "offset": s.offset, "duration": s.duration} for s in self.segments]}


def media_duration(path: str | os.PathLike[str]) -> float:
    """Seconds of a video file or of a manifest's joined segments (probing only, no decoding)."""
    if is_manifest(path):
        return sum(probe(f).duration for f in read_manifest(path))
    return probe(path).duration


def audio_pieces(source: FrameSource) -> list[AudioPiece]:
    """Where a source's sound comes from: its file, or each file of a manifest at its offset."""
    if isinstance(source, ConcatSource):
        return [
            AudioPiece(str(part.info.path), seg.offset, seg.duration, part.info.start_time, part.info.has_audio)
            for seg, part in zip(source.segments, source.parts, strict=True)
        ]
    info = source.info
    return [AudioPiece(str(info.path), 0.0, info.duration, info.start_time, info.has_audio)]


def open_source(path: str | os.PathLike[str], backend: str = DEFAULT_BACKEND) -> FrameSource:
    """A frame source for a video file or a concatenation manifest."""
    if is_manifest(path):
        return ConcatSource(path, backend)
    return FrameSource(path, backend)
