"""A stream's keyframes in presentation time, and a seek target that lands on each of them.

Demuxer indexes disagree on what their timestamps mean. MP4's holds *decode* times, which run ahead
of presentation times by the B-frame reorder delay, and further for an open-GOP keyframe (its
leading B-frames are decoded after it but shown before it); Matroska's holds presentation times.
Seeking, though, is asked in presentation time whatever the index holds: the MP4 demuxer shifts the
requested time by the stream's initial reorder delay before it searches its decode-time index, and
for open-GOP HEVC it refuses a keyframe that is shown after the requested time. So seeking to a
keyframe's index time lands on the keyframe *before* it whenever B-frames delay presentation.

Here each keyframe's presentation time is estimated as its index time plus the offset measured on
the first keyframe packet (exact for closed GOPs, a few frames early for open ones), and a keyframe
is reached by asking for the time halfway to the next one, which lands on it under either meaning of
the index. Readers still check the presentation time of the keyframe they land on before using it.
"""

from __future__ import annotations

import bisect
import itertools
import statistics
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import structlog

log = structlog.get_logger(__name__)

_FIRST_KEY_SEARCH = 64
"""Packets read from the start of the stream to find the first keyframe's presentation time."""


@dataclass(frozen=True, slots=True)
class KeyframeIndex:
    """Keyframes in presentation order: estimated times and the seek target of each."""

    times: list[float]
    """Estimated presentation times in video seconds, ascending."""
    seek_targets: list[int]
    """Per keyframe, a timestamp (stream time base) that a backward seek turns into that keyframe."""

    def position(self, t: float) -> int:
        """Index of the keyframe whose estimated time is ``t`` (a value taken from :attr:`times`)."""
        i = bisect.bisect_left(self.times, t)
        if i == len(self.times) or self.times[i] != t:
            raise ValueError(f"{t} is not a keyframe time of this index")
        return i

    def last_at_or_before(self, t: float) -> int | None:
        """Index of the last keyframe estimated at or before ``t``, or None."""
        i = bisect.bisect_right(self.times, t)
        return i - 1 if i else None


def read_keyframe_index(container: Any, stream: Any, start_pts: int) -> KeyframeIndex | None:
    """The keyframe index of ``stream``, or None when the container has none.

    Seeks to the start first: some demuxers (Matroska) read their index only when asked to seek.
    """
    time_base = Fraction(stream.time_base)
    container.seek(start_pts, stream=stream, backward=True)
    first_pts = _first_keyframe_pts(container, stream)
    stamps = sorted({int(e.timestamp) for e in stream.index_entries if e.is_keyframe})
    if not stamps:
        return None
    offset = 0 if first_pts is None else first_pts - stamps[0]
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    if gaps and abs(offset) * 2 >= min(gaps):
        # Not a reorder delay: the first packet we read is not the first indexed keyframe.
        log.info("keyframe_offset_ignored", offset=offset, smallest_gap=min(gaps))
        offset = 0
    half_gap = int(statistics.median(gaps)) // 2 if gaps else round(1 / time_base)
    targets = [(a + b) // 2 + offset for a, b in itertools.pairwise(stamps)]
    targets.append(stamps[-1] + offset + max(1, half_gap))
    presented = [s + offset for s in stamps]
    if gaps:
        later = _open_gop_delay(container, stream, targets[1], presented[1], min(gaps))
        presented = presented[:1] + [s + later for s in presented[1:]]
    times = [float((s - start_pts) * time_base) for s in presented]
    return KeyframeIndex(times, targets)


def _open_gop_delay(container: Any, stream: Any, target: int, estimate: int, smallest_gap: int) -> int:
    """How much later than ``estimate`` the second keyframe is shown (0 for closed GOPs)."""
    container.seek(target, stream=stream, backward=True)
    shown = _first_keyframe_pts(container, stream)
    if shown is None:
        return 0
    delay = shown - estimate
    if not 0 <= delay * 2 < smallest_gap:
        log.info("keyframe_delay_ignored", delay=delay, smallest_gap=smallest_gap)
        return 0
    return delay


def _first_keyframe_pts(container: Any, stream: Any) -> int | None:
    """Presentation timestamp of the first keyframe packet from the current position, if any."""
    for n, packet in enumerate(container.demux(stream)):
        if n >= _FIRST_KEY_SEARCH or packet.size == 0:
            return None
        if packet.is_keyframe and packet.pts is not None:
            return int(packet.pts)
    return None
