"""Machinery figures of agents' eval folders: calls, tokens and cache share per question, how runs ended, declines.

Stand-in runs measure the machinery, never an agent's accuracy: this table has no accuracy column. It lists
the questions an agent missed by name (so a change in what the stand-in reads shows up), and splits how
each run ended: by the agent's own decision (its planner, controller or policy answered; the evidence was
judged sufficient) or at a limit (turns, steps, rounds, budget, nothing left to look at).

Usage: python benchmarks/bench_machinery.py EVAL_DIR [EVAL_DIR ...] [--markdown]
(each EVAL_DIR an `eval run --out` folder; the rows are grouped by agent and video duration)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

OWN_DECISIONS = ("answered", "evidence sufficient")
"""Stop reasons that are an agent's own decision (``the planner answered``...); any other is a limit."""
ONE_PASS = ("single call",)
"""Stop reasons of an agent that answers after one look by design (uniform)."""


def ended(row: dict[str, Any]) -> str:
    """``decided``, ``limit`` or ``one pass`` (an agent that stops by design after one look, like uniform)."""
    reason = str(row.get("stop_reason") or "")
    if not reason or reason in ONE_PASS:
        return "one pass"
    return "decided" if any(word in reason for word in OWN_DECISIONS) else "limit"


def rows_of(folder: Path) -> list[dict[str, Any]]:
    """The finished rows of an eval folder (the last row per question wins, as in reports)."""
    latest: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("results*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                latest[row["item"]] = row
    return list(latest.values())


def table(folders: list[Path]) -> list[dict[str, Any]]:
    """One line per (agent, duration group)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for folder in folders:
        for row in rows_of(folder):
            groups[(row["agent"], str(row.get("groups", {}).get("duration", "?")))].append(row)
    out = []
    for (agent, duration), rows in sorted(groups.items()):
        ok = [r for r in rows if r.get("status") == "ok"]
        n = max(1, len(ok))
        prompt = sum(r.get("prompt_tokens", 0) for r in ok)
        ends: dict[str, int] = defaultdict(int)
        for r in ok:
            ends[ended(r)] += 1
        out.append(
            {
                "agent": agent,
                "duration": duration,
                "questions": len(rows),
                "failed": len(rows) - len(ok),
                "calls_per_q": round(sum(r.get("calls", 0) for r in ok) / n, 1),
                "tokens_per_q": round(sum(r.get("tokens", 0) for r in ok) / n),
                "cached_share": round(sum(r.get("cached_tokens", 0) for r in ok) / prompt, 3) if prompt else 0.0,
                "decided": ends["decided"],
                "limit": ends["limit"],
                "one_pass": ends["one pass"],
                "declined": sum(1 for r in ok if r.get("declined")),
                "missed": sorted(r["item"] for r in rows if not r.get("correct")),
            }
        )
    return out


def markdown(lines: list[dict[str, Any]]) -> str:
    """The table as Markdown (missed questions named after it)."""
    out = [
        "| agent | duration | questions | calls/q | tokens/q | cached | ended: decided / limit / one pass | declined |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for t in lines:
        out.append(
            f"| {t['agent']} | {t['duration']} | {t['questions']} | {t['calls_per_q']} | {t['tokens_per_q']:,} | "
            f"{t['cached_share']:.0%} | {t['decided']} / {t['limit']} / {t['one_pass']} | {t['declined']} |"
        )
    out.append("")
    for t in lines:
        out.append(f"- {t['agent']} {t['duration']}: missed {len(t['missed'])}: {', '.join(t['missed']) or '-'}")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    lines = table(args.folders)
    sys.stdout.write((markdown(lines) if args.markdown else json.dumps(lines, indent=1)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
