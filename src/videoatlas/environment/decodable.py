"""How far a video stream's frames really go: a cut file's header still claims its full length.

A Matroska file keeps its duration at the start and its index at the end, so a cut copy reports the
full duration and has no index; an MP4 with its index at the start (faststart) indexes samples that
are no longer in the file. The end is found by reading (not decoding) packets from the last
keyframe whose data is still complete, and taking where the last complete packet ends.
"""

from __future__ import annotations

from typing import Any

import av
import structlog

log = structlog.get_logger(__name__)

_DEMUX_ERRORS = (av.error.InvalidDataError, av.error.EOFError, av.error.UndefinedError)


def decodable_end(container: Any, stream: Any, file_size: int, header_end: int) -> int | None:
    """Stream timestamp where the last complete video packet ends, or None when no packet is found.

    ``header_end`` is where the header says the stream ends (stream time base); reading starts at
    the last keyframe before it or, for an index pointing past the end of the file, before the last
    sample that is still whole.
    """
    target = _last_whole_sample(stream, file_size)
    container.seek(header_end if target is None else target, stream=stream, backward=True)
    end: int | None = None
    packets = container.demux(stream)
    while True:
        try:
            packet = next(packets)
        except StopIteration:
            break
        except _DEMUX_ERRORS as exc:
            log.info("tail_read_stopped", error=str(exc))
            break
        if packet.size == 0 or packet.pts is None:
            continue
        if packet.pos is not None and packet.pos >= 0 and packet.pos + packet.size > file_size:
            break
        packet_end = int(packet.pts) + max(int(packet.duration or 0), 0)
        end = packet_end if end is None else max(end, packet_end)
    return end


def _last_whole_sample(stream: Any, file_size: int) -> int | None:
    """Decode timestamp of the last indexed sample that ends inside the file, if the index overshoots it.

    None when the index is empty, carries no sample sizes (Matroska cues), or ends inside the file.
    """
    entries = stream.index_entries
    n = len(entries)
    if not n or entries[n - 1].size <= 0 or entries[n - 1].pos < 0:
        return None
    i = n - 1
    while i >= 0 and entries[i].pos + entries[i].size > file_size:
        i -= 1
    if i == n - 1:
        return None
    return int(entries[max(i, 0)].timestamp)
