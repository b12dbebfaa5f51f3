"""Video files: probing, content identity, and the frame types every decoding backend returns."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import av
import numpy as np
import numpy.typing as npt

from videoatlas.errors import VideoError

FrameMethod = Literal["keyframe", "exact", "unavailable"]
RGBImage = npt.NDArray[np.uint8]


@dataclass(frozen=True, slots=True)
class VideoInfo:
    """What a probe learns about a video file."""

    path: str
    duration: float
    """Seconds from the first frame's start to the last frame's end."""
    fps: float
    frame_count: int
    width: int
    height: int
    has_audio: bool
    codec: str
    start_time: float
    """Presentation time of the first frame in the file's own clock; video time 0 maps to it."""

    def as_dict(self) -> dict[str, object]:
        """Plain-data view for JSON output."""
        return {
            "path": self.path,
            "duration": self.duration,
            "fps": self.fps,
            "frame_count": self.frame_count,
            "width": self.width,
            "height": self.height,
            "has_audio": self.has_audio,
            "codec": self.codec,
        }


@dataclass(frozen=True, slots=True)
class DecodedFrame:
    """One frame chosen for a cell or a time, scaled by the decoder, or marked unavailable."""

    time: float
    """Video time of the frame in seconds (for an unavailable frame: the time that was asked for)."""
    image: RGBImage | None
    method: FrameMethod
    reason: str | None = None

    @property
    def available(self) -> bool:
        """Whether pixels were decoded."""
        return self.image is not None

    @property
    def nbytes(self) -> int:
        """Memory held by the pixels."""
        return 0 if self.image is None else int(self.image.nbytes)


def fit_within(width: int, height: int, box: int) -> tuple[int, int]:
    """Even dimensions that fit ``width x height`` inside a ``box x box`` square, aspect kept."""
    if width <= 0 or height <= 0 or box <= 0:
        raise VideoError(f"cannot scale a {width}x{height} frame into {box} px")
    scale = min(box / width, box / height)
    # Floor to even sizes: yuv420 scalers want them, and flooring never exceeds the box.
    return max(2, int(width * scale) // 2 * 2), max(2, int(height * scale) // 2 * 2)


def check_file(path: str | os.PathLike[str]) -> Path:
    """The path as a :class:`Path`, or a clear error if it is not a readable regular file."""
    p = Path(path)
    if not p.exists():
        raise VideoError(f"no such file: {p}")
    if not p.is_file():
        raise VideoError(f"not a regular file: {p}")
    if not os.access(p, os.R_OK):
        raise VideoError(f"file is not readable: {p}")
    if p.stat().st_size == 0:
        raise VideoError(f"file is empty: {p}")
    return p


def probe(path: str | os.PathLike[str]) -> VideoInfo:
    """Read a video's duration, frame rate, frame count, size and whether it has audio.

    Probing uses PyAV (FFmpeg's demuxers) whatever decoding backend is chosen later.
    """
    p = check_file(path)
    try:
        container = av.open(str(p))
    except av.error.FFmpegError as exc:
        raise VideoError(f"{p} is not a readable video ({_ffmpeg_reason(exc)})") from None
    try:
        videos = list(container.streams.video)
        has_audio = bool(container.streams.audio)
        if not videos:
            if has_audio:
                raise VideoError(f"{p} has no video stream (audio only)")
            if not container.streams and not container.duration:
                # What a recording stopped before its first frame looks like: a header, no samples.
                raise VideoError(f"{p} has zero duration (no frames in any stream)")
            raise VideoError(f"{p} has no video stream")
        stream = videos[0]
        ctx = stream.codec_context
        fps = float(stream.average_rate or stream.guessed_rate or 0)
        tb = float(stream.time_base) if stream.time_base else 0.0
        start = float(stream.start_time * tb) if stream.start_time is not None and tb else 0.0
        if stream.duration is not None and tb:
            duration = float(stream.duration * tb)
        elif container.duration is not None:
            duration = container.duration / 1_000_000
        else:
            duration = 0.0
        frames = int(stream.frames or 0)
        if frames == 0 and fps > 0:
            frames = round(duration * fps)
        if duration <= 0 or frames <= 0:
            raise VideoError(f"{p} has zero duration (no video frames)")
        if fps <= 0:
            fps = frames / duration
        return VideoInfo(
            path=str(p),
            duration=duration,
            fps=fps,
            frame_count=frames,
            width=int(ctx.width),
            height=int(ctx.height),
            has_audio=has_audio,
            codec=str(ctx.name),
            start_time=start,
        )
    finally:
        container.close()


def _ffmpeg_reason(exc: BaseException) -> str:
    text = getattr(exc, "strerror", None) or str(exc)
    return str(text).split(":")[0].strip() or type(exc).__name__


_IDENTITY_CHUNK = 1 << 20


def video_identity(path: str | os.PathLike[str]) -> str:
    """A content hash of a video file: its size plus its first and last MiB.

    Cheap on a multi-gigabyte file, stable across renames and copies, and different for any two
    encodes one would meet in practice. Render caches are keyed by it.
    """
    p = check_file(path)
    size = p.stat().st_size
    digest = hashlib.sha256(f"videoatlas-video-v1:{size}:".encode())
    with p.open("rb") as fh:
        digest.update(fh.read(_IDENTITY_CHUNK))
        if size > _IDENTITY_CHUNK:
            fh.seek(max(_IDENTITY_CHUNK, size - _IDENTITY_CHUNK))
            digest.update(fh.read(_IDENTITY_CHUNK))
    return digest.hexdigest()[:32]
