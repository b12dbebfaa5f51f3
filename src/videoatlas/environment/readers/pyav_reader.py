"""PyAV backend: seeks by the container's keyframe index, decodes forward, scales in libswscale."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import av
import structlog

from videoatlas.environment.geometry import Interval
from videoatlas.environment.plan import FrameTarget, group_runs, plan_frames
from videoatlas.environment.readers import ReaderStats
from videoatlas.environment.video import DecodedFrame, VideoInfo, fit_within
from videoatlas.errors import VideoError

log = structlog.get_logger(__name__)


class PyAVReader:
    """A reader over one open container. Not thread-safe: pool readers, one per thread at a time."""

    name = "pyav"

    def __init__(self, info: VideoInfo) -> None:
        self.info = info
        self.stats = ReaderStats()
        try:
            self._container = av.open(info.path)
        except av.error.FFmpegError as exc:
            raise VideoError(f"{info.path} cannot be opened for decoding ({exc})") from None
        self._stream = self._container.streams.video[0]
        # Frame threading delays the first frame after every seek by a thread's worth of packets;
        # we seek often and decode few frames per seek, so slice threading is the better trade.
        self._stream.thread_type = "SLICE"
        if self._stream.time_base is None:
            raise VideoError(f"{info.path}: the video stream has no time base")
        self._tb = self._stream.time_base
        self._start_pts = self._stream.start_time or 0
        self._keyframes: list[float] | None = None
        self._index_read = False

    def close(self) -> None:
        """Close the container."""
        self._container.close()

    # -- time conversion ---------------------------------------------------------------------

    def _to_seconds(self, pts: int) -> float:
        return float((pts - self._start_pts) * self._tb)

    def _to_pts(self, seconds: float) -> int:
        return int(seconds / self._tb) + self._start_pts

    def keyframe_times(self) -> list[float] | None:
        """Keyframe times from the demuxer's index (read once, no decoding); None if it has none."""
        if not self._index_read:
            self._index_read = True
            entries = self._stream.index_entries
            times = sorted(self._to_seconds(e.timestamp) for e in entries if e.is_keyframe)
            self._keyframes = times or None
        return self._keyframes

    # -- decoding ----------------------------------------------------------------------------

    def _frames_from(self, seconds: float) -> Iterator[tuple[float, Any, int]]:
        """Seek to the keyframe at or before ``seconds`` and yield (time, frame, errors so far)."""
        self.stats.seeks += 1
        self._container.seek(max(self._to_pts(seconds), self._start_pts), stream=self._stream, backward=True)
        errors = 0
        for packet in self._container.demux(self._stream):
            try:
                frames = packet.decode()
            except (av.error.InvalidDataError, av.error.EOFError, av.error.UndefinedError) as exc:
                errors += 1
                self.stats.decode_errors += 1
                log.debug("decode_error", video=self.info.path, error=str(exc))
                continue
            for frame in frames:
                self.stats.frames_decoded += 1
                if frame.pts is None:
                    continue
                if getattr(frame, "is_corrupt", False):
                    errors += 1
                    self.stats.decode_errors += 1
                    continue
                yield self._to_seconds(frame.pts), frame, errors

    def _convert(self, frame: Any, box: int) -> Any:
        width, height = fit_within(frame.width, frame.height, box)
        return frame.to_ndarray(width=width, height=height, format="rgb24", interpolation="AREA")

    def fetch(
        self,
        windows: Sequence[Interval],
        box: int,
        targets: Sequence[float] | None = None,
        allow_keyframes: bool = True,
    ) -> list[DecodedFrame]:
        """Execute a frame plan: keyframe snaps first, then exact runs (demoted snaps included)."""
        keyframes = self.keyframe_times()
        plan = plan_frames(windows, targets, keyframes, allow_keyframes)
        out: dict[int, DecodedFrame] = {}
        demoted: list[FrameTarget] = []
        for item in plan.keyframe_targets:
            snapped = self._snap(item, box)
            if snapped is None:
                demoted.append(FrameTarget(item.key, item.window, item.target))
            else:
                out[item.key] = snapped
        runs = plan.runs + (group_runs(demoted, keyframes) if demoted else [])
        for run in runs:
            out.update(self._run_exact(run, box))
        return [out[i] for i in range(len(windows))]

    def _snap(self, item: FrameTarget, box: int) -> DecodedFrame | None:
        assert item.keyframe is not None
        for t, frame, _errors in self._frames_from(item.keyframe):
            if item.window.contains(t):
                self.stats.keyframe_snaps += 1
                return DecodedFrame(t, self._convert(frame, box), "keyframe")
            break
        self.stats.demoted_keyframes += 1
        return None

    def _run_exact(self, run: list[FrameTarget], box: int) -> dict[int, DecodedFrame]:
        """One seek and one forward pass; each target gets the frame on screen at its time."""
        out: dict[int, DecodedFrame] = {}
        pending = list(run)
        prev: tuple[float, Any, int] | None = None
        for t, frame, errors in self._frames_from(pending[0].target):
            while pending and t > pending[0].target:
                item = pending.pop(0)
                out[item.key] = self._choose(item, prev, (t, frame, errors), box)
            if not pending:
                break
            prev = (t, frame, errors)
        for item in pending:  # the stream ended before these targets
            out[item.key] = self._choose(item, prev, None, box)
        return out

    def _choose(
        self,
        item: FrameTarget,
        prev: tuple[float, Any, int] | None,
        nxt: tuple[float, Any, int] | None,
        box: int,
    ) -> DecodedFrame:
        """The frame on screen at the target, if we can vouch that it is; else the next one in the window."""
        if prev is not None:
            t, frame, errors_at_prev = prev
            clean_since = nxt is None or nxt[2] == errors_at_prev
            if t >= item.window.start or clean_since:
                self.stats.exact_frames += 1
                return DecodedFrame(t, self._convert(frame, box), "exact")
        if nxt is not None and item.window.contains(nxt[0]):
            self.stats.exact_frames += 1
            return DecodedFrame(nxt[0], self._convert(nxt[1], box), "exact")
        self.stats.unavailable += 1
        reason = "undecodable frames" if (nxt and nxt[2]) or (prev and prev[2]) else "no frame in this interval"
        return DecodedFrame(item.target, None, "unavailable", reason)
