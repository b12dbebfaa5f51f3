"""EEA's anchor hit rate on an eval folder: how often the anchors fall where the answer is shown.

For each finished question of an EEA eval run (``videoatlas eval run --agent eea``), the run's
final state is read back from the run store, and its anchors are checked against the question's
ground-truth time ranges: a hit is an anchor inside one of them. Reported: the share of questions
with a hit among the first round's anchor frames (what semantic-guided expansion used first) and
among all anchors at the end, next to accuracy.

Usage: python benchmarks/bench_eea.py EVAL_DIR [--db URL] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import structlog

from videoatlas.runs import load_finished

log = structlog.get_logger(__name__)


def _inside(t: float, ranges: list[list[float]]) -> bool:
    return any(a <= t <= b for a, b in ranges)


async def hit_rates(folder: Path, db: str | None) -> dict[str, Any]:
    """Accuracy and anchor hit rates over the folder's finished questions that have truth ranges."""
    rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines() if line.strip()]
    finished = [r for r in rows if r.get("status") == "ok" and r.get("truth_ranges")]
    first = final = correct = counted = 0
    for row in finished:
        result = await load_finished(row["run_id"], db)
        if result is None:
            log.warning("run_not_found", run_id=row["run_id"])
            continue
        counted += 1
        ranges = row["truth_ranges"]
        rounds = result.state.get("rounds") or []
        first += bool(rounds) and any(_inside(t, ranges) for t in rounds[0].anchor_frames)
        final += any(_inside(a.time, ranges) for a in result.state.get("anchors") or [])
        correct += bool(row.get("correct"))
    return {
        "questions": counted,
        "accuracy": _share(correct, counted),
        "first_round_anchor_hit_rate": _share(first, counted),
        "final_anchor_hit_rate": _share(final, counted),
    }


def _share(n: int, of: int) -> float | None:
    return round(n / of, 4) if of else None


def main() -> None:
    """Print the hit rates of one eval folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--db", default=None, help="the run store (default: the one the runs used)")
    args = parser.parse_args()
    report = asyncio.run(hit_rates(args.folder, args.db))
    structlog.get_logger().info("anchor_hit_rate", folder=str(args.folder), **report)
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
