"""Grid rendering benchmark: videoatlas (PyAV, decord) against the naive decord baseline.

Cases (targets from the environment issue):
  root-1h     root 8x8 grid of a 1-hour 1280x720 25 fps H.264 video, keyframe every 10 s (<= 1.0 s cold)
  cache-1h    the same grid again from the on-disk render cache                              (<= 0.05 s)
  span-56s    an 8x8 grid inside a 56 s span of that video (root cell 10)                     (<= 2.0 s)
  root-10h    root grid of a 10-hour 640x360 video                                           (<= 1.0 s cold)
  root-20m          root grid of a 20-minute 1280x720 25 fps H.264 video, keyframe every 10 s, no B-frames
  root-20m-bframes  the same content as H.264 with B-frames (x264 veryfast, closed GOPs: ffmpeg's defaults)
  root-20m-hevc     the same content as HEVC (x265 ultrafast: B-frames, open GOPs)
                    (issue 16: B-frame and HEVC root grids within 1.5x of root-20m, 0 demoted keyframes)
Peak RSS is read for every run; the target is <= 500 MB while rendering from the 10-hour file.

Every measurement runs in a fresh Python process (imports excluded from the timing), so "cold"
means: no decoded frame, no open container, no render cache in memory. The OS page cache is warm
(the files were just written or read), which is stated in BENCHMARKS.md.

Usage: python benchmarks/bench_grid.py [--data DIR] [--repeat N] [--cases A,B] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_720P_25 = {"width": 1280, "height": 720, "fps": 25.0, "gop_s": 10.0, "scenecut": False, "subtitles": False}
VIDEO_SPECS: dict[str, dict[str, Any]] = {
    "video_1h": {"duration": 3600, "seed": 11, **_720P_25},
    "video_10h": {
        "duration": 36000,
        "seed": 12,
        "width": 640,
        "height": 360,
        "fps": 5,
        "gop_s": 10,
        "scenecut": False,
        "subtitles": False,
    },
    "video_20m": {"duration": 1200, "seed": 13, **_720P_25},
    "video_20m_bframes": {"duration": 1200, "seed": 13, **_720P_25, "bframes": 3},
    "video_20m_hevc": {"duration": 1200, "seed": 13, **_720P_25, "codec": "hevc", "bframes": 4, "open_gop": True},
}
METHODS = ("videoatlas-pyav", "videoatlas-decord", "naive-decord")
CASES: dict[str, tuple[str, tuple[int, ...], tuple[str, ...]]] = {
    "root-1h": ("video_1h", (), METHODS),
    "span-56s": ("video_1h", (10,), METHODS),
    "root-10h": ("video_10h", (), METHODS),
    "root-20m": ("video_20m", (), METHODS[:2]),
    "root-20m-bframes": ("video_20m_bframes", (), METHODS[:2]),
    # decord refuses open GOPs (its frames would not match their times), so PyAV only.
    "root-20m-hevc": ("video_20m_hevc", (), METHODS[:1]),
}
STAT_KEYS = ("seeks", "frames_decoded", "packets_decoded", "keyframe_snaps", "exact_frames", "demoted_keyframes")


def ensure_videos(data: Path, names: set[str]) -> dict[str, Path]:
    from videoatlas.synth import SynthSpec, synthesize

    paths = {}
    for name in sorted(names):
        spec = SynthSpec(**VIDEO_SPECS[name])
        path = data / name / "video.mp4"
        if not path.is_file():
            began = time.perf_counter()
            sys.stderr.write(
                f"encoding {name} ({spec.duration:.0f} s, {spec.width}x{spec.height}, {spec.fps} fps, "
                f"{spec.codec}, {spec.bframes} B-frames)...\n"
            )
            synthesize(spec, data / name)
            sys.stderr.write(f"  done in {time.perf_counter() - began:.0f} s\n")
        paths[name] = path
    return paths


def run_one(method: str, video: str, path: tuple[int, ...], cache_dir: str | None) -> dict[str, Any]:
    """One measurement, in this (fresh) process; module imports happen before the clock starts."""
    import decord  # noqa: F401  (imported up front so that no method pays for imports in its timing)

    from videoatlas.environment.atlas import VideoAtlas
    from videoatlas.environment.cache import RenderCache
    from videoatlas.environment.frames import FrameSource
    from videoatlas.environment.readers import decord_reader, pyav_reader  # noqa: F401

    began = time.perf_counter()
    if method == "naive-decord":
        result = naive_decord(video, path)
    else:
        backend = method.removeprefix("videoatlas-")
        source = FrameSource(video, backend=backend)
        atlas = VideoAtlas(source, cache=RenderCache(cache_dir) if cache_dir else None)
        opened = time.perf_counter()
        view = atlas.grid(path)
        done = time.perf_counter()
        stats = source.stats()
        source.close()
        result = {
            "open_s": opened - began,
            "grid_s": done - opened,
            "cache_hit": view.image.cache_hit,
            **{key: getattr(stats, key) for key in STAT_KEYS},
        }
    result["total_s"] = time.perf_counter() - began
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def naive_decord(video: str, path: tuple[int, ...]) -> dict[str, Any]:
    """The baseline: decord at native size, get_batch on exact midpoint frames, resize in PIL."""
    import decord
    from PIL import Image

    from videoatlas.environment.geometry import grid_for_path
    from videoatlas.environment.render import encode_jpeg, render_grid
    from videoatlas.environment.video import DecodedFrame, probe

    began = time.perf_counter()
    info = probe(video)
    vr = decord.VideoReader(video, ctx=decord.cpu(0))
    opened = time.perf_counter()
    grid = grid_for_path(info.duration, path)
    fps = vr.get_avg_fps()
    indices = [min(len(vr) - 1, int(c.interval.mid * fps)) for c in grid.cells]
    batch = vr.get_batch(indices).asnumpy()
    frames = []
    for idx, arr in zip(indices, batch, strict=True):
        img = Image.fromarray(arr)
        img.thumbnail((320, 320), Image.Resampling.BILINEAR)
        frames.append(DecodedFrame(idx / fps, __import__("numpy").asarray(img), "exact"))
    encode_jpeg(render_grid(grid.cells, frames, 8, 320))
    return {"open_s": opened - began, "grid_s": time.perf_counter() - opened, "cache_hit": False}


def measure(method: str, video: Path, path: tuple[int, ...], cache_dir: str | None) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--one", method, str(video), "/".join(map(str, path)) or "root"]
    if cache_dir:
        cmd.append(cache_dir)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="bench-data", help="where the benchmark videos are kept")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=None, help="write all raw results as JSON here")
    parser.add_argument(
        "--cases", default=",".join([*CASES, "cache-1h"]), help="comma-separated cases to run (default: all)"
    )
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        method, video, path_text, *cache = args.one
        path = () if path_text == "root" else tuple(int(p) for p in path_text.split("/"))
        sys.stdout.write(json.dumps(run_one(method, video, path, cache[0] if cache else None)) + "\n")
        return

    chosen = args.cases.split(",")
    unknown = set(chosen) - {*CASES, "cache-1h"}
    if unknown:
        parser.error(f"unknown case(s): {', '.join(sorted(unknown))}")
    needed = {CASES[c][0] for c in chosen if c in CASES} | ({"video_1h"} if "cache-1h" in chosen else set())
    videos = ensure_videos(Path(args.data), needed)
    rows: list[dict[str, Any]] = []
    pairs = [(case, method) for case in chosen if case in CASES for method in CASES[case][2]]
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {pair: [] for pair in pairs}
    # Repeats go round all cases in turn, so that a change in the machine's load (a shared machine)
    # falls on every case alike instead of on whichever ran at that time.
    for _ in range(args.repeat):
        for case, method in pairs:
            video_key, path, _methods = CASES[case]
            runs[case, method].append(measure(method, videos[video_key], path, None))
    for case, method in pairs:
        rows.append(summarise(case, method, runs[case, method]))
        print_row(rows[-1])
    if "cache-1h" in chosen:
        for method in ("videoatlas-pyav", "videoatlas-decord"):
            with tempfile.TemporaryDirectory() as cache_dir:
                measure(method, videos["video_1h"], (), cache_dir)  # fill the cache
                cached = [measure(method, videos["video_1h"], (), cache_dir) for _ in range(args.repeat)]
            assert all(r["cache_hit"] for r in cached)
            rows.append(summarise("cache-1h", method, cached))
            print_row(rows[-1])
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


def summarise(case: str, method: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    med: dict[str, Any] = {
        k: statistics.median(r[k] for r in runs) for k in ("open_s", "grid_s", "total_s", "peak_rss_mb")
    }
    med["grid_min_s"] = min(r["grid_s"] for r in runs)
    extra: dict[str, Any] = {k: runs[0][k] for k in STAT_KEYS if k in runs[0]}
    return {"case": case, "method": method, "runs": len(runs), **med, **extra}


def print_row(row: dict[str, Any]) -> None:
    sys.stdout.write(
        f"{row['case']:<16} {row['method']:<18} open {row['open_s']:7.3f} s  grid {row['grid_s']:7.3f} s "
        f"(min {row['grid_min_s']:.3f})  "
        f"total {row['total_s']:7.3f} s  peak RSS {row['peak_rss_mb']:6.0f} MB"
        + (
            f"  seeks {row['seeks']} frames {row['frames_decoded']} packets {row['packets_decoded']}"
            f" snaps {row['keyframe_snaps']} demoted {row['demoted_keyframes']}"
            if "seeks" in row
            else ""
        )
        + "\n"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
