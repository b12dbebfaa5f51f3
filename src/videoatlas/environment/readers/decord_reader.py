"""decord backend: frame indices from decord's own index, batch decoding scaled by decord.

decord indexes the whole file when it opens (slow and memory-hungry on long videos, see
BENCHMARKS.md) and decodes to one output size fixed at open time, so a reader is bound to a box.

decord returns pixels without their timestamps, so a frame can only be checked against decord's own
index. That index is wrong for open GOPs (x265's default, x264's ``open-gop``): decord places each
keyframe where it is decoded rather than where it is shown, and frames it returns after one can be
a few frames later than its index says. A reader therefore refuses a file whose keyframes decord
places elsewhere than the container shows them.

decord turns some rotated pictures itself: those whose rotation its FFmpeg (4.x) sees as a
``rotate`` tag, which it makes from an MP4/MOV display matrix or reads from the file, but not a
Matroska display matrix. Pictures it leaves sideways are turned here.
"""

from __future__ import annotations

import bisect

import av
import numpy as np
import structlog

from videoatlas.environment.keyframes import KeyframeIndex, read_keyframe_index
from videoatlas.environment.orientation import displayed_size, rotate_tag_degrees, upright
from videoatlas.environment.plan import FramePlan, FrameTarget
from videoatlas.environment.readers.base import ReaderStats, VideoReader
from videoatlas.environment.video import DecodedFrame, VideoInfo, fit_within
from videoatlas.errors import VideoError

log = structlog.get_logger(__name__)

_FLOAT32_STEP = 2.0**-23
"""Relative spacing of float32 values, decord's type for frame times."""


class DecordReader(VideoReader):
    """A decord ``VideoReader`` bound to one output size. Not thread-safe: pool readers."""

    name = "decord"

    def __init__(self, info: VideoInfo, box: int) -> None:
        import decord

        self.info = info
        self.stats = ReaderStats()
        self._decord = decord
        keys, decord_turns = _container_facts(info)
        self._turn = 0 if decord_turns else info.rotation
        """Degrees still to turn decord's pictures by (decord scales them before this)."""
        width, height = fit_within(*displayed_size(info.width, info.height, self._turn), box)
        try:
            self._vr = decord.VideoReader(info.path, ctx=decord.cpu(0), width=width, height=height)
        except decord.DECORDError as exc:
            raise VideoError(f"{info.path} cannot be opened by decord ({str(exc).splitlines()[0]})") from None
        n = len(self._vr)
        spans = self._vr.get_frame_timestamp(np.arange(n))
        self._starts: list[float] = spans[:, 0].tolist()
        self._ends: list[float] = spans[:, 1].tolist()
        self._keyframes: list[float] | None = None
        self._check_keyframes_where_shown(keys)

    def close(self) -> None:
        """Drop the decord reader (decord has no explicit close)."""
        del self._vr

    def _check_keyframes_where_shown(self, keys: KeyframeIndex | None) -> None:
        """Refuse the file if decord's second keyframe is not where the container shows it."""
        ours = self._vr.get_key_indices()
        if len(ours) < 2 or keys is None or len(keys.times) < 2:
            return
        at, shown = self._starts[ours[1]], keys.times[1]
        if abs(at - shown) > 0.5 / max(self.info.fps, 1.0):
            raise VideoError(
                f"{self.info.path}: decord puts keyframes at other times than they are shown "
                f"({at:.3f} s vs {shown:.3f} s: open GOPs), so its frames would not match "
                "their times; use the pyav backend"
            )

    def keyframe_times(self) -> list[float] | None:
        """Keyframe times from decord's index of the file."""
        if self._keyframes is None:
            keys = self._vr.get_key_indices()
            self._keyframes = sorted(self._starts[i] for i in keys) or None
        return self._keyframes

    def _index_at(self, t: float) -> int:
        """Index of the frame on screen at ``t`` (the last one starting at or before it)."""
        # decord keeps times as float32: a frame starting at exactly t may be stored one step above.
        return max(0, bisect.bisect_right(self._starts, t + abs(t) * _FLOAT32_STEP) - 1)

    def execute(self, plan: FramePlan, count: int, box: int) -> list[DecodedFrame]:
        """Map the plan to frame indices and decode them in one ``get_batch`` call (at the size bound at open)."""
        chosen: dict[int, tuple[int, FrameTarget, bool]] = {}
        for item in plan.keyframe_targets:
            assert item.keyframe is not None
            chosen[item.key] = (self._index_at(item.keyframe), item, True)
        for run in plan.runs:
            for item in run:
                chosen[item.key] = (self._index_at(item.target), item, False)
        pixels = self._decode(sorted({idx for idx, _, _ in chosen.values()}))
        self.stats.seeks += plan.seeks
        out: list[DecodedFrame] = []
        for key in range(count):
            idx, item, snap = chosen[key]
            image = pixels.get(idx)
            if image is None:
                out.append(self._unavailable(item, "undecodable frame"))
            elif not self._inside(idx, item, snap):
                out.append(self._unavailable(item, "no frame in this interval"))
            elif snap:
                self.stats.keyframe_snaps += 1
                out.append(DecodedFrame(self._starts[idx], upright(image, self._turn), "keyframe"))
            else:
                self.stats.exact_frames += 1
                out.append(DecodedFrame(self._starts[idx], upright(image, self._turn), "exact"))
        return out

    def _inside(self, idx: int, item: FrameTarget, snap: bool) -> bool:
        """Whether frame ``idx`` is shown inside the window, or (exact frames) on screen at the target."""
        start, end = self._starts[idx], self._ends[idx]
        return item.window.contains(start) or (not snap and start <= item.target < end)

    def _unavailable(self, item: FrameTarget, reason: str) -> DecodedFrame:
        self.stats.unavailable += 1
        return DecodedFrame(item.target, None, "unavailable", reason)

    def _decode(self, indices: list[int]) -> dict[int, np.ndarray]:
        """Decode in one batch; if decord fails on the batch, per frame so one bad frame costs one cell."""
        if not indices:
            return {}
        try:
            batch = self._vr.get_batch(indices).asnumpy()
            self.stats.frames_decoded += len(indices)
            return {idx: batch[j] for j, idx in enumerate(indices)}
        except self._decord.DECORDError as exc:
            self.stats.decode_errors += 1
            log.info("decord_batch_failed", video=self.info.path, error=str(exc).splitlines()[0])
        out: dict[int, np.ndarray] = {}
        for idx in indices:
            try:
                out[idx] = self._vr[idx].asnumpy()
                self.stats.frames_decoded += 1
            except self._decord.DECORDError:
                self.stats.decode_errors += 1
        return out


def _container_facts(info: VideoInfo) -> tuple[KeyframeIndex | None, bool]:
    """The keyframe index as PyAV reads it, and whether decord turns the pictures itself."""
    with av.open(info.path) as container:
        stream = container.streams.video[0]
        keys = read_keyframe_index(container, stream, stream.start_time or 0)
        from_mov = "mov" in container.format.name.split(",")
        decord_turns = bool(info.rotation) and (from_mov or rotate_tag_degrees(stream) != 0)
    return keys, decord_turns
