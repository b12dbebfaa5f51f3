"""One compact table per duration from the suite of kinds: a row per kind, a column per agent.

Each cell is ``right · mean tokens · mean calls`` over that kind's questions at that duration (right:
how many were answered right, of how many; a failed run counts as wrong), read from each eval folder's
``results.jsonl`` as ``benchmarks/bench_kinds.sh`` leaves them. The folder's name is the agent's.

Usage: python benchmarks/kinds_table.py DIR [DIR ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

KIND_ORDER = ("needle", "count", "count_open", "order", "right_after", "first_last", "open_value")
DURATION_ORDER = ("10min", "1h", "3h")


def rows_of(folder: Path) -> list[dict[str, Any]]:
    """The finished rows of one eval folder's results (the last row per item wins, as ``eval report`` reads them)."""
    last: dict[str, dict[str, Any]] = {}
    for line in (folder / "results.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            last[str(row["item"])] = row
    return list(last.values())


def cell(rows: list[dict[str, Any]]) -> str:
    right = sum(1 for r in rows if r.get("correct"))
    tokens = sum(int(r.get("tokens") or 0) for r in rows) / len(rows)
    calls = sum(int(r.get("calls") or 0) for r in rows) / len(rows)
    mark = f"{right}" if len(rows) == 1 else f"{right}/{len(rows)}"
    return f"{mark} · {tokens / 1000:.1f}K · {calls:g}"


def out(line: str) -> None:
    sys.stdout.write(line + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args()
    table: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    agents = [f.name for f in args.folders]
    for folder in args.folders:
        for row in rows_of(folder):
            kind = (row.get("categories") or ["?"])[0]
            duration = str((row.get("groups") or {}).get("duration", "?"))
            table[(duration, str(kind), folder.name)].append(row)
    durations = [d for d in DURATION_ORDER if any(k[0] == d for k in table)]
    durations += sorted({k[0] for k in table} - set(durations))
    for duration in durations:
        out(f"\n{duration}: right · mean tokens · mean calls\n")
        out("| kind | " + " | ".join(agents) + " |")
        out("| --- |" + " --- |" * len(agents))
        kinds = [k for k in KIND_ORDER if any(key[:2] == (duration, k) for key in table)]
        totals = {a: [0, 0] for a in agents}
        for kind in kinds:
            cells = []
            for agent in agents:
                rows = table.get((duration, kind, agent), [])
                cells.append(cell(rows) if rows else "-")
                totals[agent][0] += sum(1 for r in rows if r.get("correct"))
                totals[agent][1] += len(rows)
            out(f"| {kind} | " + " | ".join(cells) + " |")
        out("| **all** | " + " | ".join(f"**{r}/{n}**" for r, n in totals.values()) + " |")


if __name__ == "__main__":
    main()
