"""Where a root grid's decoding time goes, per codec: seek, decode and convert one keyframe per cell.

Reads the 20-minute videos that ``bench_grid.py`` writes into ``bench-data/`` (H.264 without
B-frames, H.264 with B-frames, HEVC with open GOPs) and, for 64 cells evenly over each video, times
the three steps the PyAV reader takes for a keyframe snap: seek and read up to the keyframe packet,
decode that packet alone (send it, then drain the decoder), convert the frame to 320 px RGB in
libswscale. Then the same work split over 1 and 2 threads, each with its own container, to see how
far decoding runs in parallel (PyAV lets the GIL go while FFmpeg decodes and scales).

This is PyAV and FFmpeg alone, no videoatlas code: it measures the floor that the reader sits on.

Usage: python benchmarks/bench_keyframe_decode.py [--data bench-data] [--cells 64] [--repeat 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import av

VIDEOS = {
    "h264": "video_20m",
    "h264-bframes": "video_20m_bframes",
    "hevc": "video_20m_hevc",
}
CELL_PX = 320


def _keyframe_at(container: Any, stream: Any, seconds: float) -> Any:
    """Seek back to ``seconds`` and return the first keyframe packet after it."""
    container.seek(int(seconds / stream.time_base), stream=stream, backward=True)
    for packet in container.demux(stream):
        if packet.is_keyframe and packet.size:
            return packet
    raise RuntimeError(f"no keyframe after {seconds:.1f} s")


def _cell_times(path: Path, cells: int) -> list[float]:
    with av.open(str(path)) as container:
        if container.duration is None:
            raise SystemExit(f"{path}: the container states no duration")
        duration = container.duration / 1_000_000
    return [(i + 0.5) * duration / cells for i in range(cells)]


def steps(path: Path, cells: int) -> dict[str, float]:
    """Seconds spent in each step over ``cells`` keyframe snaps, one container, slice threading."""
    return _snap_all(path, _cell_times(path, cells))


def _snap_all(path: Path, times: list[float]) -> dict[str, float]:
    """Snap to the keyframe at each of ``times``: seek, decode it alone, convert it; seconds per step."""
    spent = {"seek": 0.0, "decode": 0.0, "convert": 0.0}
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "SLICE"
        for t in times:
            a = time.perf_counter()
            packet = _keyframe_at(container, stream, t)
            b = time.perf_counter()
            frames = packet.decode() + stream.codec_context.decode(None)
            c = time.perf_counter()
            frames[0].to_ndarray(width=CELL_PX, height=CELL_PX * 9 // 16, format="rgb24", interpolation="AREA")
            d = time.perf_counter()
            spent["seek"] += b - a
            spent["decode"] += c - b
            spent["convert"] += d - c
    return spent


def threaded(path: Path, cells: int, threads: int) -> float:
    """Wall seconds for all snaps (seek, decode, convert) split round-robin over ``threads`` threads."""
    times = _cell_times(path, cells)
    shares = [times[i::threads] for i in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        start = time.perf_counter()
        list(pool.map(lambda share: _snap_all(path, share), shares))
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", default="bench-data")
    parser.add_argument("--cells", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for name, folder in VIDEOS.items():
        path = Path(args.data) / folder / "video.mp4"
        if not path.is_file():
            raise SystemExit(f"{path} is missing: run benchmarks/bench_grid.py --cases root-20m,... first")
        steps(path, args.cells)  # warm the page cache and FFmpeg's first-use set-up
        runs = [steps(path, args.cells) for _ in range(args.repeat)]
        median = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        walls = {n: statistics.median(threaded(path, args.cells, n) for _ in range(args.repeat)) for n in (1, 2)}
        results[name] = {
            **{f"{k}_s": round(v, 4) for k, v in median.items()},
            "decode_ms_per_keyframe": round(1000 * median["decode"] / args.cells, 2),
            "threads_1_s": round(walls[1], 4),
            "threads_2_s": round(walls[2], 4),
        }
        r = results[name]
        line = (
            f"{name:13} seek {r['seek_s']:.3f} s  decode {r['decode_s']:.3f} s "
            f"({r['decode_ms_per_keyframe']:.2f} ms/keyframe)  convert {r['convert_s']:.3f} s  "
            f"1 thread {r['threads_1_s']:.3f} s  2 threads {r['threads_2_s']:.3f} s"
        )
        sys.stdout.write(line + "\n")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
