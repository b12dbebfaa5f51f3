"""Counting on the signage style across seeds: 1 to 5 separate appearances, with decoys, and needles as control.

Makes the 10-minute (or ``--duration``) signage videos of seeds ``--seeds`` under ``--root`` (once) and
writes ``ROOT/counts/items.jsonl`` with their ``count``, ``count_open`` and ``needle`` questions (the
needle is the cost baseline: "a count costs at most ~2x a needle on the same video"). Then run, e.g.:

    videoatlas eval run --dataset jsonl --root bench-data/suite/counts --agent video-rlm \
        --out bench-data/kinds/counts-video-rlm --standin
    videoatlas eval report bench-data/kinds/counts-video-rlm --by seed

Usage: python benchmarks/bench_counts.py [--root bench-data/suite] [--seeds 1-5] [--duration 600]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from videoatlas.evals.datasets.synthetic import ensure_video, load
from videoatlas.evals.items import EvalItem, write_items

KINDS = ("count", "count_open", "needle")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("bench-data/suite"))
    parser.add_argument("--seeds", default="1-5", help="a range a-b or a comma-separated list")
    parser.add_argument("--duration", type=float, default=600.0)
    args = parser.parse_args()
    if "-" in args.seeds:
        lo, hi = (int(x) for x in args.seeds.split("-"))
        seeds = list(range(lo, hi + 1))
    else:
        seeds = [int(x) for x in args.seeds.split(",")]
    root = args.root.resolve()  # the items file names videos by absolute path
    items: list[EvalItem] = []
    for seed in seeds:
        folder, truth = ensure_video(root, args.duration, seed, "signage")
        k = sum(1 for e in truth["events"] if e["kind"] == "count")
        for item in load(root, [args.duration], seed, ["signage"]):
            if item.categories[0] in KINDS:
                groups = {**item.groups, "seed": str(seed), "appearances": str(k)}
                items.append(EvalItem(**{**item.as_dict(), "groups": groups}))
        print(f"seed {seed}: {folder} ({k} appearance(s) of the counted badge)")  # noqa: T201 - a script's output
    path = write_items(root / "counts" / "items.jsonl", items)
    print(f"{len(items)} question(s): {path}")  # noqa: T201


if __name__ == "__main__":
    main()
