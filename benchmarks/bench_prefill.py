"""What a question costs in prefill, before and after a change: eval folders of the same suite, side by side.

For each agent and video duration: prompt tokens per question, the share the server's prefix cache served,
the uncached prefill per question (prompt less cached: what a GPU computes), and how many answers differ
between the two sides (by question, the answer given). Only the questions both sides finished are counted.
With the stand-in these are machinery figures: its
cached tokens come from its simulation of vLLM's prefix cache (docs/standin.md), never from a GPU.

Usage: python benchmarks/bench_prefill.py BEFORE_DIR AFTER_DIR [--markdown]
(each DIR holds one `eval run --out` folder per agent, named after it, as written by the suite commands in
BENCHMARKS.md)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench_machinery import rows_of


def figures(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Per question: prompt tokens, cached share, uncached prefill; and the count of questions."""
    ok = [r for r in rows if r.get("status") == "ok"]
    n = max(1, len(ok))
    prompt = sum(int(r.get("prompt_tokens", 0)) for r in ok)
    cached = sum(int(r.get("cached_tokens", 0)) for r in ok)
    return {
        "questions": len(ok),
        "prompt_per_q": round(prompt / n),
        "cached_share": round(cached / prompt, 3) if prompt else 0.0,
        "uncached_per_q": round((prompt - cached) / n),
    }


def _said(row: dict[str, Any]) -> tuple[Any, ...]:
    """What a question's run gave: its status, its answer, whether it declined."""
    return row.get("status"), row.get("answer"), row.get("declined")


def grouped(root: Path) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """(agent, duration) -> item -> its row, over every agent folder under ``root``."""
    out: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob("results*.jsonl"))):
        for row in rows_of(folder):
            out[(row["agent"], str(row.get("groups", {}).get("duration", "?")))][row["item"]] = row
    return out


def compare(before: Path, after: Path) -> list[dict[str, Any]]:
    """One line per (agent, duration) found on both sides."""
    old, new = grouped(before), grouped(after)
    lines = []
    for key in sorted(old.keys() & new.keys()):
        a, b = old[key], new[key]
        both = sorted(a.keys() & b.keys())
        changed = [i for i in both if _said(a[i]) != _said(b[i])]
        lines.append(
            {
                "agent": key[0],
                "duration": key[1],
                "before": figures([a[i] for i in both]),
                "after": figures([b[i] for i in both]),
                "answers_changed": changed,
                "answered": [
                    sum(1 for i in both if _said(side[i])[0] == "ok" and not _said(side[i])[2]) for side in (a, b)
                ],
            }
        )
    return lines


def markdown(lines: list[dict[str, Any]]) -> str:
    """The comparison as a Markdown table (changed answers named after it)."""
    out = [
        "| agent | video | questions | prompt/q | cached | uncached prefill/q | answered | answers changed |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for t in lines:
        a, b = t["before"], t["after"]
        change = (b["uncached_per_q"] - a["uncached_per_q"]) / a["uncached_per_q"] if a["uncached_per_q"] else 0.0
        out.append(
            f"| {t['agent']} | {t['duration']} | {b['questions']} | {a['prompt_per_q']:,} → {b['prompt_per_q']:,} | "
            f"{a['cached_share']:.0%} → {b['cached_share']:.0%} | {a['uncached_per_q']:,} → {b['uncached_per_q']:,} "
            f"({change:+.0%}) | {t['answered'][0]} → {t['answered'][1]} | {len(t['answers_changed'])} |"
        )
    changed = [t for t in lines if t["answers_changed"]]
    if changed:
        out.append("")
        out.extend(f"- {t['agent']} {t['duration']}: {', '.join(t['answers_changed'])}" for t in changed)
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    lines = compare(args.before, args.after)
    sys.stdout.write((markdown(lines) if args.markdown else json.dumps(lines, indent=1)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
