"""Grid rendering benchmark: videoatlas (PyAV, decord) against the naive decord baseline.

Cases (targets from the environment issue):
  root-1h     root 8x8 grid of a 1-hour 1280x720 25 fps H.264 video, keyframe every 10 s (<= 1.0 s cold)
  cache-1h    the same grid again from the on-disk render cache                              (<= 0.05 s)
  span-56s    an 8x8 grid inside a 56 s span of that video (root cell 10)                     (<= 2.0 s)
  root-10h    root grid of a 10-hour 640x360 video                                           (<= 1.0 s cold)
Peak RSS is read for every run; the target is <= 500 MB while rendering from the 10-hour file.

Every measurement runs in a fresh Python process (imports excluded from the timing), so "cold"
means: no decoded frame, no open container, no render cache in memory. The OS page cache is warm
(the files were just written or read), which is stated in BENCHMARKS.md.

Usage: python benchmarks/bench_grid.py [--data DIR] [--repeat N] [--out results.json]
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

CASES = {
    "root-1h": ("video_1h", ()),
    "span-56s": ("video_1h", (10,)),
    "root-10h": ("video_10h", ()),
}
METHODS = ("videoatlas-pyav", "videoatlas-decord", "naive-decord")


def ensure_videos(data: Path) -> dict[str, Path]:
    from videoatlas.environment.synth import SynthSpec, synthesize

    specs = {
        "video_1h": SynthSpec(
            duration=3600, seed=11, width=1280, height=720, fps=25, gop_s=10, scenecut=False, subtitles=False
        ),
        "video_10h": SynthSpec(
            duration=36000, seed=12, width=640, height=360, fps=5, gop_s=10, scenecut=False, subtitles=False
        ),
    }
    paths = {}
    for name, spec in specs.items():
        path = data / name / "video.mp4"
        if not path.is_file():
            began = time.perf_counter()
            sys.stderr.write(
                f"encoding {name} ({spec.duration:.0f} s, {spec.width}x{spec.height}, {spec.fps} fps)...\n"
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
            "seeks": stats.seeks,
            "frames_decoded": stats.frames_decoded,
            "keyframe_snaps": stats.keyframe_snaps,
            "exact_frames": stats.exact_frames,
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
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        method, video, path_text, *cache = args.one
        path = () if path_text == "root" else tuple(int(p) for p in path_text.split("/"))
        sys.stdout.write(json.dumps(run_one(method, video, path, cache[0] if cache else None)) + "\n")
        return

    videos = ensure_videos(Path(args.data))
    rows: list[dict[str, Any]] = []
    for case, (video_key, path) in CASES.items():
        for method in METHODS:
            runs = [measure(method, videos[video_key], path, None) for _ in range(args.repeat)]
            rows.append(summarise(case, method, runs))
            print_row(rows[-1])
    for method in ("videoatlas-pyav", "videoatlas-decord"):
        with tempfile.TemporaryDirectory() as cache_dir:
            measure(method, videos["video_1h"], (), cache_dir)  # fill the cache
            runs = [measure(method, videos["video_1h"], (), cache_dir) for _ in range(args.repeat)]
        assert all(r["cache_hit"] for r in runs)
        rows.append(summarise("cache-1h", method, runs))
        print_row(rows[-1])
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


def summarise(case: str, method: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    med: dict[str, Any] = {
        k: statistics.median(r[k] for r in runs) for k in ("open_s", "grid_s", "total_s", "peak_rss_mb")
    }
    extra: dict[str, Any] = {
        k: runs[0][k] for k in ("seeks", "frames_decoded", "keyframe_snaps", "exact_frames") if k in runs[0]
    }
    return {"case": case, "method": method, "runs": len(runs), **med, **extra}


def print_row(row: dict[str, Any]) -> None:
    sys.stdout.write(
        f"{row['case']:<9} {row['method']:<18} open {row['open_s']:7.3f} s  grid {row['grid_s']:7.3f} s  "
        f"total {row['total_s']:7.3f} s  peak RSS {row['peak_rss_mb']:6.0f} MB"
        + (f"  seeks {row['seeks']} decoded {row['frames_decoded']}" if "seeks" in row else "")
        + "\n"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
