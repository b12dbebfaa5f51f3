"""Video files: probing, content identity, and the frame types every decoding backend returns."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import av
import numpy as np
import numpy.typing as npt
import structlog

from videoatlas.environment.decodable import decodable_end
from videoatlas.environment.files import check_file
from videoatlas.environment.orientation import display_rotation, displayed_size
from videoatlas.errors import VideoError

log = structlog.get_logger(__name__)

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
    rotation: int = 0
    """Degrees (counter-clockwise) decoded pictures are turned for display; width and height are as displayed."""
    decodable_end: float | None = None
    """Where the frames that can be decoded end, when that is before ``duration`` (a cut file); else None."""

    @property
    def decodable_duration(self) -> float:
        """Seconds of video that can actually be decoded (``duration`` unless the file is cut short)."""
        return self.duration if self.decodable_end is None else self.decodable_end

    def as_dict(self) -> dict[str, object]:
        """Plain-data view for JSON output."""
        return {
            "path": self.path,
            "duration": self.duration,
            "decodable_duration": self.decodable_duration,
            "fps": self.fps,
            "frame_count": self.frame_count,
            "width": self.width,
            "height": self.height,
            "rotation": self.rotation,
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


def probe(path: str | os.PathLike[str]) -> VideoInfo:
    """Read a video's duration, frame rate, frame count, size, rotation and whether it has audio.

    Probing uses PyAV (FFmpeg's demuxers) whatever decoding backend is chosen later. It decodes the
    first frame (where the display matrix is found) and reads the packets of the last keyframe
    interval (to find where a cut file's frames really end).
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
        rotation = display_rotation(stream, _first_frame(container, stream))
        width, height = displayed_size(int(ctx.width), int(ctx.height), rotation)
        return VideoInfo(
            path=str(p),
            duration=duration,
            fps=fps,
            frame_count=frames,
            width=width,
            height=height,
            has_audio=has_audio,
            codec=str(ctx.name),
            start_time=start,
            rotation=rotation,
            decodable_end=_cut_short_at(container, stream, p, start, duration, fps),
        )
    finally:
        container.close()


_DECODE_ERRORS = (av.error.InvalidDataError, av.error.EOFError, av.error.UndefinedError)
_FIRST_FRAME_PACKETS = 64


def _first_frame(container: Any, stream: Any) -> Any | None:
    """The first frame that decodes within the stream's first packets, or None."""
    for n, packet in enumerate(container.demux(stream)):
        if n >= _FIRST_FRAME_PACKETS:
            break
        try:
            frames = packet.decode()
        except _DECODE_ERRORS:
            continue
        if frames:
            return frames[0]
    log.info("no_first_frame", video=container.name, packets=_FIRST_FRAME_PACKETS)
    return None


def _cut_short_at(container: Any, stream: Any, path: Path, start: float, duration: float, fps: float) -> float | None:
    """Where decodable frames end when the file is cut short of its header's duration, else None."""
    tb = Fraction(stream.time_base)
    header_end = round((Fraction(start) + Fraction(duration)) / tb)
    end = decodable_end(container, stream, path.stat().st_size, header_end)
    if end is None:
        log.warning("stream_end_unreadable", video=str(path))
        return None
    seconds = max(0.0, float(end * tb) - start)
    # Within a frame and a half of the header's end is an intact file (rounding, a last short frame).
    return seconds if seconds < duration - 1.5 / fps else None


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
