"""Video-RLM with semantic anchors off, frames only, marks only and both, on questions the root grid hides.

The synthetic suite's videos (chosen styles and lengths) are made if missing. A question counts when
its needle is not visible in the root grid's fixed frames: no fixed frame of the root grid lies
inside any of its ground-truth time ranges. Each such question is asked once per mode against the
in-process stand-in (its embeddings route runs multilingual-e5-small over what it reads in each
frame), every run kept in one SQLite file, so each video's index is built by the first mode that
needs it and reused after; its frames and build seconds are reported apart. Printed: a Markdown
table per mode (accuracy, rounds, calls, tokens, frames viewed, wall time) and the index costs.

The stand-in embeds the text it reads in a frame, not the objects in it: anchors can only help it
where the needle carries printed text. Its figures are stand-in figures, not a VLM's.

Usage: python benchmarks/bench_anchors.py --root DIR [--durations 1m,10m] [--styles chapters,broadcast] [--seeds 1,2]
       [--modes off,frames,marks,both] [--limit N] [--k 8] [--rounds 4] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import structlog

from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.frames import FrameSource
from videoatlas.environment.timefmt import parse_time
from videoatlas.evals.datasets.synthetic import ensure_video
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import run_question
from videoatlas.runtime import frame_index
from videoatlas.runtime.config import RunConfig
from videoatlas.standin.perception import Reader
from videoatlas.standin.server import RunningServer, StandinConfig, StandinServer

log = structlog.get_logger(__name__)


def hidden_questions(video: Path, truth: dict[str, Any], k: int) -> list[dict[str, Any]]:
    """Questions none of whose ground-truth ranges holds a fixed frame of the root grid."""
    with FrameSource(video) as source:
        root = VideoAtlas(source, k=k, cell_px=64).grid(())
        shown = [float(f["time"]) for f in root.image.frames]
    out = []
    for q in truth["questions"]:
        ranges = q.get("evidence") or []
        if ranges and not any(a <= t <= b for a, b in ranges for t in shown):
            out.append(q)
    return out


async def run_all(args: argparse.Namespace) -> dict[str, Any]:
    """Every (question, mode) run, and the index costs per video."""
    items: list[tuple[Path, dict[str, Any]]] = []
    for seed in (int(s) for s in args.seeds.split(",")):
        for style in args.styles.split(","):
            for duration in args.durations.split(","):
                folder, truth = ensure_video(args.root, parse_time(duration), seed, style)
                video = folder / truth["video"]
                items += [(video, q) for q in hidden_questions(video, truth, args.k)]
    if args.limit:
        items = items[: args.limit]
    db = f"sqlite:///{(args.root / 'bench_anchors.db').resolve()}"
    rows: list[dict[str, Any]] = []
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        endpoint = EndpointSettings(base_url=server.base_url)
        for mode in args.modes.split(","):
            for video, q in items:
                frame_index.forget()
                config = RunConfig.of(agent="video-rlm", k=args.k, rounds=args.rounds, anchors=mode)
                began = time.perf_counter()
                result = await run_question(video, q["question"], q["choices"], config, endpoint, db_url=db)
                rows.append(
                    {
                        "mode": mode,
                        "video": video.parent.name,
                        "question": q["id"],
                        "correct": result.answer == q["answer"],
                        "rounds": int(result.state.get("round", 0)),
                        "calls": result.cost.calls,
                        "tokens": result.cost.tokens,
                        "frames_viewed": result.cost.frames_viewed,
                        "index_frames": result.index_frames,
                        "index_s": round(result.index_s, 1),
                        "wall_s": round(time.perf_counter() - began, 1),
                    }
                )
                log.info("asked", **rows[-1])
                if args.json:  # written as it goes: a long run stopped midway keeps what it measured
                    args.json.write_text(json.dumps({"questions": len(items), "rows": rows}, indent=1))
    return {"questions": len(items), "rows": rows}


def table(report: dict[str, Any]) -> str:
    """The Markdown tables: one row per mode, then the index built per video.

    Only questions asked in every mode count (a run stopped midway leaves some asked in fewer).
    """
    modes = list(dict.fromkeys(r["mode"] for r in report["rows"]))
    asked: dict[tuple[str, str], set[str]] = {}
    for r in report["rows"]:
        asked.setdefault((r["video"], r["question"]), set()).add(r["mode"])
    whole = {q for q, done in asked.items() if done == set(modes)}
    rows = [r for r in report["rows"] if (r["video"], r["question"]) in whole]
    lines = [
        f"{len(whole)} questions (of {report['questions']}) whose needle no root-grid frame shows, asked in every mode",
        "",
        "| anchors | accuracy | rounds | calls | tokens | frames viewed | wall s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for mode in modes:
        mine = [r for r in rows if r["mode"] == mode]

        def mean(key: str, mine: list[dict[str, Any]] = mine) -> float:
            return statistics.fmean(r[key] for r in mine)

        accuracy = 100 * sum(r["correct"] for r in mine) / len(mine)
        lines.append(
            f"| {mode} | {accuracy:.1f}% | {mean('rounds'):.2f} | {mean('calls'):.1f} | {mean('tokens'):,.0f} | "
            f"{mean('frames_viewed'):.0f} | {mean('wall_s') - mean('index_s'):.1f} |"
        )
    built = {r["video"]: r for r in report["rows"] if r["index_s"] > 0}
    lines += ["", "| video | index frames | index build s |", "| --- | ---: | ---: |"]
    lines += [f"| {v} | {r['index_frames']} | {r['index_s']} |" for v, r in sorted(built.items())]
    return "\n".join(lines)


def main() -> None:
    """Run the modes and print the tables (and write the rows with --json, after each run)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--durations", default="1m,10m")
    parser.add_argument("--styles", default="chapters,broadcast")
    parser.add_argument("--seeds", default="1", help="the suite's videos of these seeds (more seeds, more questions)")
    parser.add_argument("--modes", default="off,frames,marks,both")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--table", type=Path, default=None, help="print the tables of a --json file and exit")
    args = parser.parse_args()
    if args.table:
        sys.stdout.write(table(json.loads(args.table.read_text())) + "\n")
        return
    report = asyncio.run(run_all(args))
    sys.stdout.write(table(report) + "\n")


if __name__ == "__main__":
    main()
