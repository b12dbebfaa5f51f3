"""What every decoding backend shares: the reader interface, its planning step and its work counters."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from videoatlas.environment.geometry import Interval
from videoatlas.environment.plan import FramePlan, plan_frames
from videoatlas.environment.video import DecodedFrame, VideoInfo


@dataclass(slots=True)
class ReaderStats:
    """Work a reader has done since it was opened: what the plan cost, and what went wrong."""

    seeks: int = 0
    """Seeks made executing plans (the one-time read of the keyframe index is not counted)."""
    frames_decoded: int = 0
    """Frames that came out of the decoder."""
    packets_decoded: int = 0
    """Compressed packets fed to the decoder: the decoding work behind those frames (PyAV only)."""
    keyframe_snaps: int = 0
    exact_frames: int = 0
    demoted_keyframes: int = 0
    decode_errors: int = 0
    unavailable: int = 0


def sum_stats(parts: Iterable[ReaderStats]) -> ReaderStats:
    """Field-by-field sum of several readers' stats."""
    total = ReaderStats()
    for part in parts:
        for name in ReaderStats.__dataclass_fields__:
            setattr(total, name, getattr(total, name) + getattr(part, name))
    return total


class VideoReader(ABC):
    """An open video that returns one frame per window, scaled in the decoder to fit ``box``.

    Every backend plans the same way (:func:`~videoatlas.environment.plan.plan_frames` over its
    keyframes) and executes the plan its own way (:meth:`execute`).
    """

    name: str
    info: VideoInfo
    stats: ReaderStats

    @abstractmethod
    def keyframe_times(self) -> list[float] | None:
        """Sorted keyframe times in video seconds, or None when the container has no index."""

    def fetch(
        self,
        windows: Sequence[Interval],
        box: int,
        targets: Sequence[float] | None = None,
        allow_keyframes: bool = True,
    ) -> list[DecodedFrame]:
        """One frame per window (in request order): a keyframe inside it or the frame at its target."""
        plan = plan_frames(windows, targets, self.keyframe_times(), allow_keyframes)
        return self.execute(plan, len(windows), box)

    @abstractmethod
    def execute(self, plan: FramePlan, count: int, box: int) -> list[DecodedFrame]:
        """The frames of a plan over ``count`` windows, in window order."""

    @abstractmethod
    def close(self) -> None:
        """Release the file and decoder."""
