"""Video-RLM acceptance figures with the stand-in VLM (which reads pixels with OCR; it is not a VLM).

Cases:
  accuracy  needle-in-chapter questions on synthetic videos of 10 min (3 videos), 1 h and 10 h:
            accuracy, tokens per question (10 h over 1 h), prefix-cache hit rate
  workers   the same questions with 1 and with 7 workers, the stand-in answering in a fixed 1 s per call
            (--kinds picks the question kinds: needles only by default, or the suite's four kinds)
  depth     the 10 h questions with maximum depth 0, 1 and auto (= 2 for 10 h)

Each question is one run of the agent over real HTTP against an in-process stand-in server; one
server per (case, video), so its prefix cache spans the questions asked about that video, as a
vLLM server's would during an eval. Results go to bench-data/agent/<case>.jsonl, one line per run.
With --base-url (accuracy and depth), the questions go to a real server instead, e.g. one started
with `videoatlas serve` on a GPU machine, and the cache figures are the server's own.

Usage: python benchmarks/bench_agent.py accuracy|workers|depth [--per-duration N] [--style S] [--base-url URL]
(--style picks the synthetic style, chapters or broadcast; results of broadcast go to <case>-broadcast.jsonl)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from videoatlas.agents.video_rlm.settings import VideoRLMSettings
from videoatlas.llm.records import CallRecord
from videoatlas.llm.settings import EndpointSettings
from videoatlas.logging import configure_logging
from videoatlas.runs import run_question
from videoatlas.runtime.context import RunConfig
from videoatlas.synth import STYLES, Style, SynthSpec, default_fps, load_current, synthesize
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

DATA = Path("bench-data/agent")
VIDEOS = {
    **{f"10min-s{seed}": (600, seed) for seed in range(1, 7)},
    "1h": (3600, 1),
    "10h": (36000, 1),
}
KINDS = ("needle_in_chapter", "counting", "order", "after_anchor")
STYLE: Style = "chapters"
"""The synthetic style of every video this run asks about (``--style``)."""


def video(name: str) -> tuple[Path, dict[str, Any]]:
    duration, seed = VIDEOS[name]
    out = DATA / (name if STYLE == "chapters" else f"{name}-{STYLE}")
    if load_current(out, style=STYLE) is None:
        began = time.perf_counter()
        synthesize(SynthSpec(duration=duration, seed=seed, fps=default_fps(duration), style=STYLE), out)
        sys.stderr.write(f"synthesised {name} in {time.perf_counter() - began:.0f} s\n")
    truth: dict[str, Any] = json.loads((out / "video.json").read_text())
    return out / "video.mp4", truth


def pick_questions(
    truth: dict[str, Any], limit: int, kinds: tuple[str, ...] = ("needle_in_chapter",)
) -> list[dict[str, Any]]:
    """The video's first ``limit`` needle questions, then every question of the other ``kinds``."""
    picked = [q for q in truth["questions"] if q["kind"] == "needle_in_chapter" and q["kind"] in kinds][:limit]
    return picked + [q for q in truth["questions"] if q["kind"] in kinds and q["kind"] != "needle_in_chapter"]


async def ask_all(
    name: str,
    questions: list[dict[str, Any]],
    config: RunConfig,
    reader: Reader,
    latency: float = 0.0,
    label: str = "",
    real: EndpointSettings | None = None,
) -> list[dict[str, Any]]:
    """Every question as one run; against ``real`` if given, else a fresh in-process stand-in."""
    path, _ = video(name)
    settings = VideoRLMSettings.model_validate(config.settings)
    rows = []
    with contextlib.ExitStack() as stack:
        if real is None:
            server = stack.enter_context(RunningServer(StandinServer(StandinConfig(latency_s=latency), reader=reader)))
            endpoint = EndpointSettings(base_url=server.base_url, model="", timeout_s=300)
        else:
            endpoint = real
        for q in questions:
            result = await run_question(path, q["question"], q["choices"], config, endpoint)
            row = {
                "case": label,
                "video": name,
                "question": q["id"],
                "kind": q["kind"],
                "correct": result.answer_index == q["answer_index"],
                "answer": result.answer,
                "truth": q["answer"],
                "calls": result.cost.calls,
                "tokens": result.cost.tokens,
                "prompt_tokens": result.cost.prompt_tokens,
                "cached_tokens": result.cost.cached_tokens,
                "tokens_by_role": dict(result.cost.tokens_by_role),
                "rounds": result.rounds,
                "wall_s": round(result.wall_s, 2),
                "evidence": len(result.evidence),
                "stop": result.stop_reason,
                "workers": settings.workers,
                "bfs_cells": settings.bfs_cells,
                "max_depth": settings.max_depth,
                "by_call": by_call(result.records),
            }
            rows.append(row)
            sys.stdout.write(json.dumps(row) + "\n")
            sys.stdout.flush()
    return rows


def call_kind(record: CallRecord) -> str:
    """A call's node, with a worker's first look at its view told apart from its later steps."""
    if record.node != "worker":
        return record.node
    return "worker, first step" if not record.meta.get("step") else "worker, later steps"


def add_usage(totals: dict[str, list[int]], kind: str, calls: int, prompt: int, cached: int) -> None:
    """Add to ``totals[kind]``, a [calls, prompt tokens, cached tokens] triple."""
    entry = totals.setdefault(kind, [0, 0, 0])
    entry[0] += calls
    entry[1] += prompt
    entry[2] += cached


def by_call(records: list[CallRecord]) -> dict[str, list[int]]:
    """Per kind of call: [calls, prompt tokens, cached tokens]."""
    out: dict[str, list[int]] = {}
    for record in records:
        add_usage(out, call_kind(record), 1, record.prompt_tokens, record.cached_tokens)
    return out


def group_by(rows: list[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    """Rows by the value of ``key``, in first-seen order."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(str(row[key]), []).append(row)
    return groups


def cache_by_call(rows: list[dict[str, Any]], key: str) -> list[str]:
    """Where the prompt tokens go and how much of each kind of call the prefix cache served."""
    lines = [
        f"| {key} | call | calls per question | share of prompt tokens | cache hit |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for name, group in group_by(rows, key).items():
        totals: dict[str, list[int]] = {}
        for row in group:
            for kind, usage in row["by_call"].items():
                add_usage(totals, kind, *usage)
        everything = sum(prompt for _, prompt, _ in totals.values()) or 1
        for kind, (calls, prompt, cached) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
            lines.append(
                f"| {name} | {kind} | {calls / len(group):.1f} | {prompt / everything:.0%} | "
                f"{cached / prompt if prompt else 0.0:.0%} |"
            )
    return lines


def summary(rows: list[dict[str, Any]], key: str) -> list[str]:
    lines = [
        f"| {key} | questions | accuracy | mean tokens | mean calls | cache hit | mean wall |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, group in group_by(rows, key).items():
        acc = sum(r["correct"] for r in group) / len(group)
        prompt = sum(r["prompt_tokens"] for r in group)
        hit = sum(r["cached_tokens"] for r in group) / prompt if prompt else 0.0
        lines.append(
            f"| {name} | {len(group)} | {acc:.0%} | {statistics.mean(r['tokens'] for r in group):,.0f} | "
            f"{statistics.mean(r['calls'] for r in group):.1f} | {hit:.0%} | "
            f"{statistics.mean(r['wall_s'] for r in group):.1f} s |"
        )
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("case", choices=["accuracy", "workers", "depth"])
    parser.add_argument("--per-duration", type=int, default=10)
    parser.add_argument(
        "--videos", default="1h", help="workers case: comma-separated videos (" + ", ".join(VIDEOS) + ")"
    )
    parser.add_argument(
        "--kinds",
        default="needle_in_chapter",
        help="workers case: comma-separated question kinds (" + ", ".join(KINDS) + ")",
    )
    parser.add_argument("--rounds", type=int, default=12, help="workers case: rounds allowed (both settings)")
    parser.add_argument(
        "--bfs-cells",
        type=lambda v: v if v == "auto" else int(v),
        default="auto",
        help="workers case: cells per worker in a BFS round ('auto' or a number)",
    )
    parser.add_argument("--style", choices=STYLES, default="chapters", help="the synthetic videos' style")
    parser.add_argument(
        "--base-url",
        help="accuracy and depth cases: a running OpenAI-compatible VLM server (e.g. `videoatlas serve`) "
        "instead of the stand-in; its prefix cache then spans every question of the run",
    )
    args = parser.parse_args()
    global STYLE
    STYLE = args.style
    if args.base_url and args.case == "workers":
        parser.error("--base-url: the workers case times the stand-in at a fixed 1 s per call")
    real = EndpointSettings.from_env(base_url=args.base_url, timeout_s=600) if args.base_url else None
    configure_logging("warning")
    DATA.mkdir(parents=True, exist_ok=True)
    reader = Reader()
    rows: list[dict[str, Any]] = []
    if args.case == "accuracy":
        plan = {"10min": ["10min-s1", "10min-s2", "10min-s3"], "1h": ["1h"], "10h": ["10h"]}
        for duration, names in plan.items():
            left = args.per_duration
            for name in names:
                qs = pick_questions(video(name)[1], left)
                left -= len(qs)
                for row in await ask_all(name, qs, RunConfig.of(), reader, label=duration, real=real):
                    rows.append({**row, "duration": duration})
        table = summary(rows, "duration")
        by = {d: statistics.mean(r["tokens"] for r in rows if r["duration"] == d) for d in ("1h", "10h")}
        table.append(f"\ntokens per question, 10 h over 1 h: {by['10h'] / by['1h']:.2f}\n")
        table += cache_by_call(rows, "duration")
    elif args.case == "workers":
        kinds = tuple(args.kinds.split(","))
        for name in args.videos.split(","):
            qs = pick_questions(video(name)[1], args.per_duration, kinds)
            configs = {
                workers: RunConfig.of(workers=workers, rounds=args.rounds, bfs_cells=args.bfs_cells)
                for workers in (1, 7)
            }
            for workers in (7, 1):  # first pass fills the stand-in's OCR cache, so timing measures the protocol
                await ask_all(name, qs, configs[workers], reader, label=f"warm-{workers}")
            for workers in (1, 7):
                rows += await ask_all(name, qs, configs[workers], reader, latency=1.0, label=f"{workers} workers")
        table = summary(rows, "case")
        table += ["", "| kind | questions | accuracy 1 / 7 | wall 1 worker | wall 7 workers | speedup |"]
        table.append("| --- | ---: | ---: | ---: | ---: | ---: |")
        for kind in [*kinds, "all"]:
            part = [r for r in rows if kind in ("all", r["kind"])]
            if not part:
                continue
            acc = {w: sum(r["correct"] for r in part if r["workers"] == w) for w in (1, 7)}
            wall = {w: sum(r["wall_s"] for r in part if r["workers"] == w) for w in (1, 7)}
            n = len(part) // 2
            table.append(
                f"| {kind} | {n} | {acc[1] / n:.0%} / {acc[7] / n:.0%} | {wall[1]:.1f} s | {wall[7]:.1f} s | "
                f"{wall[1] / wall[7]:.2f}x |"
            )
    else:
        qs = pick_questions(video("10h")[1], args.per_duration)
        for depth in ("0", "1", "auto"):
            config = RunConfig.model_validate({"max_depth": depth})
            rows += await ask_all("10h", qs, config, reader, label=f"max depth {depth}", real=real)
        table = summary(rows, "case")
    stem = args.case if STYLE == "chapters" else f"{args.case}-{STYLE}"
    (DATA / f"{stem}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    sys.stdout.write("\n".join(table) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
