"""The stand-in's text reader on several processes at once: its default threads against VIDEOATLAS_STANDIN_THREADS.

Each process reads the same images with a reader of its own (no disk cache, so every image is read),
as the test suite's workers and their stand-in processes do side by side. Printed per setting: the
wall time of the slowest process, the CPU seconds of all of them, and a digest of the readings (the
same digest for every setting means the readings did not change).

Usage: python benchmarks/bench_ocr_threads.py IMAGE [IMAGE ...] [--processes 3] [--threads default,1]
Grids to read: ``videoatlas grid VIDEO --start S --end E --k 4 --cell-px 320 -o gN.jpg``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
from PIL import Image


def read_all(paths: list[str]) -> None:
    """One process's part: read every image once and print what it read and what it cost (JSON)."""
    from videoatlas_standin.perception import Reader

    reader = Reader()
    images = [np.asarray(Image.open(p).convert("RGB")) for p in paths]
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    texts = [reader.see(image).text for image in images]
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    digest = hashlib.sha256(json.dumps(texts).encode()).hexdigest()[:12]
    sys.stdout.write(json.dumps({"wall_s": time.perf_counter() - start, "cpu_s": cpu, "readings": digest}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("images", nargs="*")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--threads", default="default,1", help="settings to compare, comma-separated")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        read_all(args.images)
        return
    for setting in args.threads.split(","):
        env = {**os.environ, "VIDEOATLAS_OCR_CACHE": "off"}
        env.pop("VIDEOATLAS_STANDIN_THREADS", None)
        if setting != "default":
            env["VIDEOATLAS_STANDIN_THREADS"] = setting
        command = [sys.executable, __file__, "--child", *args.images]
        procs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) for _ in range(args.processes)]
        results = [json.loads(p.communicate()[0]) for p in procs]
        wall = max(r["wall_s"] for r in results)
        cpu = sum(r["cpu_s"] for r in results)
        digests = sorted({r["readings"] for r in results})
        sys.stdout.write(
            f"threads={setting:8} processes={args.processes} slowest={wall:6.1f} s  cpu={cpu:6.1f} s  "
            f"readings={','.join(digests)}\n"
        )


if __name__ == "__main__":
    main()
