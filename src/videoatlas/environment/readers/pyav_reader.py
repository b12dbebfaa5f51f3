"""PyAV backend: seeks onto indexed keyframes, decodes forward, scales in libswscale.

Every frame handed out is checked by its presentation time: a keyframe snap must lie inside its
window, an exact frame must be on screen at its target (or lie inside its window). See
:mod:`videoatlas.environment.keyframes` for why seeking aims halfway to the next keyframe.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Any

import av
import structlog

from videoatlas.environment.keyframes import KeyframeIndex, read_keyframe_index
from videoatlas.environment.orientation import upright
from videoatlas.environment.plan import FramePlan, FrameTarget, group_runs
from videoatlas.environment.readers.base import ReaderStats, VideoReader
from videoatlas.environment.video import DecodedFrame, VideoInfo, fit_within
from videoatlas.errors import VideoError

log = structlog.get_logger(__name__)

_DECODE_ERRORS = (av.error.InvalidDataError, av.error.EOFError, av.error.UndefinedError)
_NON_KEY_PACKETS_SKIPPED = 300
"""After a seek, packets read in search of a keyframe before giving up (a demuxer landed mid-GOP)."""
_SEEK_RETRIES = 3
"""Earlier keyframes tried when a seek lands on one shown after the time asked for (open GOPs)."""
_NO_INDEX_STEPS_S = (0.0, 1.0, 4.0, 16.0)
"""Without an index: how far before the asked time successive seeks aim."""


@dataclass(frozen=True, slots=True)
class _Timed:
    """A decoded frame with its presentation time, how long it lasts, and the decode errors before it."""

    time: float
    duration: float
    frame: Any
    errors: int


class PyAVReader(VideoReader):
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
        self._frame_s = 1.0 / info.fps if info.fps > 0 else 0.04
        self._keys: KeyframeIndex | None = None
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
        """Estimated presentation times of the indexed keyframes (no decoding); None without an index."""
        if not self._index_read:
            self._index_read = True
            self._keys = read_keyframe_index(self._container, self._stream, self._start_pts)
        return self._keys.times if self._keys is not None else None

    # -- landing on keyframes ------------------------------------------------------------------

    def _land(self, target: int) -> tuple[Any, Iterator[Any]] | None:
        """Seek backward to ``target``; the first keyframe packet there and the packets after it."""
        self.stats.seeks += 1
        self._container.seek(max(target, self._start_pts), stream=self._stream, backward=True)
        packets = self._container.demux(self._stream)
        for n, packet in enumerate(packets):
            if packet.size == 0 or n > _NON_KEY_PACKETS_SKIPPED:
                return None
            if packet.is_keyframe:
                return packet, packets
        return None

    def _land_at_or_before(self, t: float) -> tuple[Any, Iterator[Any]] | None:
        """Land on the last keyframe shown at or before ``t`` (or the earliest one that can be reached)."""
        landed = None
        for target in self._targets_before(t):
            landed = self._land(target)
            if landed is not None and (landed[0].pts is None or self._to_seconds(landed[0].pts) <= t + 1e-9):
                return landed
        return landed

    def _targets_before(self, t: float) -> list[int]:
        """Seek targets for reaching ``t``, each aiming at an earlier keyframe than the one before."""
        if self._keys is not None:
            i = self._keys.last_at_or_before(t)
            if i is None:
                return [self._start_pts]
            return [self._keys.seek_targets[j] for j in range(i, max(-1, i - 1 - _SEEK_RETRIES), -1)]
        targets = []
        for back in _NO_INDEX_STEPS_S:
            targets.append(self._to_pts(max(0.0, t - back)))
            if t - back <= 0:
                break
        return targets

    # -- decoding ------------------------------------------------------------------------------

    def _decode(self, packet: Any | None) -> list[Any] | None:
        """Frames out of the decoder for ``packet`` (None drains it); None after a decode error."""
        try:
            frames: list[Any] = packet.decode() if packet is not None else self._stream.decode(None)
        except _DECODE_ERRORS as exc:
            self.stats.decode_errors += 1
            log.debug("decode_error", video=self.info.path, error=str(exc))
            return None
        if packet is not None and packet.size:
            self.stats.packets_decoded += 1
        return frames

    def _timed(self, frame: Any, errors: int) -> _Timed:
        duration = float(frame.duration * self._tb) if frame.duration else self._frame_s
        return _Timed(self._to_seconds(frame.pts), duration, frame, errors)

    def _frames_from(self, t: float) -> Iterator[_Timed]:
        """Frames in presentation order from the last keyframe shown at or before ``t``.

        Frames shown before that keyframe are dropped: in an open GOP they reference the previous
        GOP, which was not decoded.
        """
        landed = self._land_at_or_before(t)
        if landed is None:
            return
        key, rest = landed
        errors = 0
        for packet in chain([key], rest):
            frames = self._decode(packet)
            if frames is None:
                errors += 1
                continue
            for frame in frames:
                self.stats.frames_decoded += 1
                if frame.pts is None or (key.pts is not None and frame.pts < key.pts):
                    continue
                if getattr(frame, "is_corrupt", False):
                    errors += 1
                    self.stats.decode_errors += 1
                    continue
                yield self._timed(frame, errors)

    def _convert(self, frame: Any, box: int) -> Any:
        width, height = fit_within(frame.width, frame.height, box)
        image = frame.to_ndarray(width=width, height=height, format="rgb24", interpolation="AREA")
        return upright(image, self.info.rotation)

    # -- executing a plan ------------------------------------------------------------------------

    def execute(self, plan: FramePlan, count: int, box: int) -> list[DecodedFrame]:
        """Execute a frame plan: keyframe snaps first, then exact runs (demoted snaps included)."""
        keyframes = self.keyframe_times()
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
        return [out[i] for i in range(count)]

    def _snap(self, item: FrameTarget, box: int) -> DecodedFrame | None:
        """The planned keyframe if it is shown inside the window (else its neighbour towards the window).

        The landed keyframe packet's own time is checked before decoding, so a keyframe outside the
        window costs no decode; one inside costs one packet decoded and the decoder drained.
        """
        assert item.keyframe is not None and self._keys is not None
        i = self._keys.position(item.keyframe)
        for _ in range(2):
            landed = self._land(self._keys.seek_targets[i])
            if landed is None or landed[0].pts is None:
                break
            key = landed[0]
            shown = self._to_seconds(key.pts)
            if item.window.contains(shown):
                decoded = self._decode_key(key, box)
                if decoded is not None:
                    return decoded
                break
            # Estimated inside, shown outside: the neighbour on the window's side may be the one inside.
            i += 1 if shown < item.window.start else -1
            if not 0 <= i < len(self._keys.times):
                break
        self._demote(item)
        return None

    def _decode_key(self, key: Any, box: int) -> DecodedFrame | None:
        """Decode one keyframe packet alone (the drain gives its frame without later packets)."""
        for frame in (self._decode(key) or []) + (self._decode(None) or []):
            self.stats.frames_decoded += 1
            if frame.pts == key.pts and not getattr(frame, "is_corrupt", False):
                self.stats.keyframe_snaps += 1
                return DecodedFrame(self._to_seconds(frame.pts), self._convert(frame, box), "keyframe")
        return None

    def _demote(self, item: FrameTarget) -> None:
        self.stats.demoted_keyframes += 1
        log.debug("keyframe_demoted", video=self.info.path, window=str(item.window), keyframe=item.keyframe)

    def _run_exact(self, run: list[FrameTarget], box: int) -> dict[int, DecodedFrame]:
        """One seek and one forward pass; each target gets the frame on screen at its time."""
        out: dict[int, DecodedFrame] = {}
        pending = list(run)
        prev: _Timed | None = None
        for timed in self._frames_from(pending[0].target):
            while pending and timed.time > pending[0].target:
                item = pending.pop(0)
                out[item.key] = self._choose(item, prev, timed, box)
            if not pending:
                break
            prev = timed
        for item in pending:  # the stream ended before these targets
            out[item.key] = self._choose(item, prev, None, box)
        return out

    def _choose(self, item: FrameTarget, prev: _Timed | None, nxt: _Timed | None, box: int) -> DecodedFrame:
        """The frame on screen at the target, if we can vouch that it is; else the next one in the window.

        ``prev`` is on screen at the target when it is shown inside the window, or when it stays on
        screen past the target: until ``nxt`` with no frame lost between them, or, at the end of the
        stream, for its own duration (a cut file ends there, not at the header's duration).
        """
        if prev is not None:
            if nxt is not None:
                stays_past_target = nxt.errors == prev.errors
            else:
                stays_past_target = prev.time + prev.duration > item.target
            if item.window.contains(prev.time) or stays_past_target:
                self.stats.exact_frames += 1
                return DecodedFrame(prev.time, self._convert(prev.frame, box), "exact")
        if nxt is not None and item.window.contains(nxt.time):
            self.stats.exact_frames += 1
            return DecodedFrame(nxt.time, self._convert(nxt.frame, box), "exact")
        self.stats.unavailable += 1
        lost = (nxt is not None and nxt.errors) or (prev is not None and prev.errors)
        reason = "undecodable frames" if lost else "no frame in this interval"
        return DecodedFrame(item.target, None, "unavailable", reason)
