"""decord backend: frame indices from decord's own index, batch decoding scaled by decord.

decord indexes the whole file when it opens (slow and memory-hungry on long videos, see
BENCHMARKS.md) and decodes to one output size fixed at open time, so a reader is bound to a box.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np
import structlog

from videoatlas.environment.geometry import Interval
from videoatlas.environment.plan import plan_frames
from videoatlas.environment.readers import ReaderStats
from videoatlas.environment.video import DecodedFrame, VideoInfo, fit_within
from videoatlas.errors import VideoError

log = structlog.get_logger(__name__)


class DecordReader:
    """A decord ``VideoReader`` bound to one output size. Not thread-safe: pool readers."""

    name = "decord"

    def __init__(self, info: VideoInfo, box: int) -> None:
        import decord

        self.info = info
        self.stats = ReaderStats()
        self._decord = decord
        width, height = fit_within(info.width, info.height, box)
        try:
            self._vr = decord.VideoReader(info.path, ctx=decord.cpu(0), width=width, height=height)
        except decord.DECORDError as exc:
            raise VideoError(f"{info.path} cannot be opened by decord ({str(exc).splitlines()[0]})") from None
        n = len(self._vr)
        self._starts: list[float] = self._vr.get_frame_timestamp(np.arange(n))[:, 0].tolist()
        self._keyframes: list[float] | None = None

    def close(self) -> None:
        """Drop the decord reader (decord has no explicit close)."""
        del self._vr

    def keyframe_times(self) -> list[float] | None:
        """Keyframe times from decord's index of the file."""
        if self._keyframes is None:
            keys = self._vr.get_key_indices()
            self._keyframes = sorted(self._starts[i] for i in keys) or None
        return self._keyframes

    def _index_at(self, t: float) -> int:
        """Index of the frame on screen at ``t`` (the last one starting at or before it)."""
        return max(0, bisect.bisect_right(self._starts, t) - 1)

    def fetch(
        self,
        windows: Sequence[Interval],
        box: int,
        targets: Sequence[float] | None = None,
        allow_keyframes: bool = True,
    ) -> list[DecodedFrame]:
        """Map the plan to frame indices and decode them in one ``get_batch`` call."""
        plan = plan_frames(windows, targets, self.keyframe_times(), allow_keyframes)
        chosen: dict[int, tuple[int, str]] = {}
        for item in plan.keyframe_targets:
            assert item.keyframe is not None
            chosen[item.key] = (self._index_at(item.keyframe), "keyframe")
        for run in plan.runs:
            for item in run:
                chosen[item.key] = (self._index_at(item.target), "exact")
        indices = sorted({idx for idx, _ in chosen.values()})
        pixels = self._decode(indices)
        self.stats.seeks += plan.seeks
        out: list[DecodedFrame] = []
        for key, window in enumerate(windows):
            idx, method = chosen[key]
            t = self._starts[idx]
            image = pixels.get(idx)
            if image is None:
                self.stats.unavailable += 1
                out.append(DecodedFrame(window.mid, None, "unavailable", "undecodable frame"))
                continue
            if method == "keyframe":
                self.stats.keyframe_snaps += 1
            else:
                self.stats.exact_frames += 1
            out.append(DecodedFrame(t, image, "keyframe" if method == "keyframe" else "exact"))
        return out

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
