"""The pictures VideoARM's tools show: frames by their index, tiled with the index and time burned in.

Frames are read through the environment's frame source (exact frames, shared cache) and tiled by
its mosaic renderer; the label on each frame is its global frame index and its time, so that a
model can name a frame the way the controller's prompt does. Nothing here is kept: memory holds
frame indices, and the pictures are drawn again whenever they are shown.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from collections.abc import Sequence
from functools import partial
from typing import Any

from videoatlas.agents.videoarm.settings import SNAP_FRAMES
from videoatlas.environment.atlas import RenderedImage, VideoAtlas
from videoatlas.environment.render import encode_jpeg, render_mosaic, time_decimals
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import BadInputError

MOSAIC = (3, 2)
"""scene_snapper's mosaics: 3 frames across, 2 down (the paper's 3 x 2)."""
SHEET = (4, 3)
"""clip_analyzer's contact sheets: 4 frames across, 3 down."""


def snap_counts(max_images: int) -> tuple[int, ...]:
    """The scene_snapper frame counts (:data:`SNAP_FRAMES`) whose mosaics fit in one prompt of ``max_images`` images.

    The focus mosaics go to the controller and to the answer as one prompt each, so a count whose
    mosaics outnumber the endpoint's image limit (its ``max_images``, as vLLM is started; 150 frames make 25
    mosaics, the default limit is 16) is not offered.
    """
    return tuple(n for n in SNAP_FRAMES if mosaics(n) <= max_images)


def mosaics(frames: int) -> int:
    """How many 3 x 2 mosaics ``frames`` frames make."""
    return math.ceil(frames / (MOSAIC[0] * MOSAIC[1]))


def fps_of(atlas: VideoAtlas) -> float:
    """Frames per second of the video (1 for a file that does not say)."""
    fps = float(atlas.source.info.fps or 0.0)
    return fps if fps > 0 else 1.0


def frame_count(atlas: VideoAtlas) -> int:
    """Frames in the video (from its duration when the file does not say)."""
    count = int(atlas.source.info.frame_count or 0)
    return count if count > 0 else max(1, int(atlas.duration * fps_of(atlas)))


def time_of(atlas: VideoAtlas, index: int) -> float:
    """The middle of frame ``index``'s time on screen, in video seconds."""
    return min(atlas.duration, (index + 0.5) / fps_of(atlas))


def index_at(atlas: VideoAtlas, t: float) -> int:
    """The frame on screen at ``t`` seconds."""
    return max(0, min(frame_count(atlas) - 1, int(t * fps_of(atlas))))


def spread(atlas: VideoAtlas, ranges: Sequence[tuple[float, float]], n: int) -> list[int]:
    """About ``n`` distinct frame indices over ``ranges``, shared out by each range's length, in time order."""
    total = sum(max(0.0, b - a) for a, b in ranges)
    if total <= 0:
        raise BadInputError("no stretch of video to take frames from")
    picked: set[int] = set()
    for a, b in ranges:
        share = max(1, round(n * (b - a) / total))
        picked.update(index_at(atlas, a + (i + 0.5) * (b - a) / share) for i in range(share))
    return sorted(picked)


def _draw(atlas: VideoAtlas, indices: list[int], cols: int, rows: int, short_px: int) -> list[RenderedImage]:
    tile_w, tile_h = atlas.tile_size(short_px)
    times = [time_of(atlas, i) for i in indices]
    decimals = time_decimals(atlas.duration / max(1, len(indices)))
    pages = []
    for first in range(0, len(indices), cols * rows):
        began = time.perf_counter()
        ids, chunk = indices[first : first + cols * rows], times[first : first + cols * rows]
        frames = atlas.source.frames_at(chunk, max(tile_w, tile_h))
        labels = [f"{i}  {format_ts(f.time, decimals)}" for i, f in zip(ids, frames, strict=True)]
        image = render_mosaic(frames, labels, min(cols, len(chunk)), tile_w, tile_h)
        jpeg = encode_jpeg(image, atlas.jpeg_quality)
        notes: tuple[dict[str, Any], ...] = tuple(
            {"id": i, "time": f.time, "method": f.method, "reason": f.reason} for i, f in zip(ids, frames, strict=True)
        )
        pages.append(
            RenderedImage(
                "mosaic",
                jpeg,
                hashlib.sha256(jpeg).hexdigest(),
                image.width,
                image.height,
                notes,
                False,
                time.perf_counter() - began,
            )
        )
    return pages


async def sheets(atlas: VideoAtlas, indices: Sequence[int], cols: int, rows: int, short_px: int) -> list[RenderedImage]:
    """Frames ``indices`` tiled ``cols`` x ``rows`` to a page, each labelled with its index and time (off the loop)."""
    if not indices:
        return []
    loop = asyncio.get_running_loop()
    work = partial(_draw, atlas, list(indices), cols, rows, short_px)
    result: list[RenderedImage] = await loop.run_in_executor(atlas.source.executor, work)
    return result
