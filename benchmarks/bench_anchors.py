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
       [--videos 10m:1,3h:1] [--per-video N] [--modes off,frames,marks,both] [--limit N] [--k 8] [--rounds 4]
       [--json OUT [--resume]]; python benchmarks/bench_anchors.py --root DIR --table OUT [OUT ...]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
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
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

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


def spread(questions: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``n`` of the questions (all when ``n`` is 0 or too many): the kinds in turn, each kind's evenly spaced."""
    if not n or n >= len(questions):
        return questions
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for q in questions:
        by_kind.setdefault(str(q.get("kind", "")), []).append(q)
    quota = dict.fromkeys(by_kind, 0)
    while sum(quota.values()) < n:
        for kind, mine in by_kind.items():
            if quota[kind] < len(mine) and sum(quota.values()) < n:
                quota[kind] += 1
    keep = {id(mine[(i * len(mine)) // quota[k]]) for k, mine in by_kind.items() for i in range(quota[k])}
    return [q for q in questions if id(q) in keep]


def chosen_videos(args: argparse.Namespace) -> list[tuple[str, int, str]]:
    """(duration, seed, style) of every video asked about: ``--videos`` if given, else durations x seeds x styles."""
    styles = args.styles.split(",")
    if args.videos:
        pairs = [(d, int(s)) for d, s in (v.split(":") for v in args.videos.split(","))]
    else:
        pairs = [(d, int(s)) for s in args.seeds.split(",") for d in args.durations.split(",")]
    return [(d, seed, style) for d, seed in pairs for style in styles]


async def run_all(args: argparse.Namespace) -> dict[str, Any]:
    """Every (question, mode) run, and the index costs per video."""
    per_video: list[list[tuple[Path, dict[str, Any], str]]] = []
    for duration, seed, style in chosen_videos(args):
        folder, truth = ensure_video(args.root, parse_time(duration), seed, style)  # type: ignore[arg-type]
        video = folder / truth["video"]
        group = f"{duration} {style}"
        per_video.append([(video, q, group) for q in spread(hidden_questions(video, truth, args.k), args.per_video)])
    # round-robin over the videos, so that a run stopped midway (or --limit) still covers every video
    items = [q for turn in itertools.zip_longest(*per_video) for q in turn if q is not None]
    if args.limit:
        items = items[: args.limit]
    db = f"sqlite:///{(args.root / 'bench_anchors.db').resolve()}"
    rows: list[dict[str, Any]] = []
    if args.resume and args.json and args.json.is_file():  # keep what an earlier, stopped run measured
        rows = json.loads(args.json.read_text())["rows"]
    done = {(r["video"], r["question"], r["mode"]) for r in rows}
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        endpoint = EndpointSettings(base_url=server.base_url)
        for video, q, group in items:  # question by question: a run stopped midway leaves whole questions
            for mode in args.modes.split(","):
                if (video.parent.name, q["id"], mode) in done:
                    continue
                frame_index.forget()
                config = RunConfig.of(agent="video-rlm", k=args.k, rounds=args.rounds, anchors=mode)
                began = time.perf_counter()
                result = await run_question(video, q["question"], q["choices"], config, endpoint, db_url=db)
                rows.append(
                    {
                        "mode": mode,
                        "video": video.parent.name,
                        "group": group,
                        "question": q["id"],
                        "correct": result.answer == q["answer"],
                        "rounds": int(result.state.get("round", 0)),
                        "calls": result.cost.calls,
                        "tokens": result.cost.tokens,
                        "frames_viewed": result.cost.frames_viewed,
                        "index_frames": result.extras.get("index_frames", 0),
                        "index_s": round(result.extras.get("index_s", 0.0), 1),
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
    groups = list(dict.fromkeys(r.get("group", "") for r in rows))
    if len(groups) > 1:  # where it helps or hurts: accuracy (and mean rounds) per video length and style
        lines += [
            "",
            "| anchors | "
            + " | ".join(
                f"{g} ({len({(r['video'], r['question']) for r in rows if r.get('group') == g})} q)" for g in groups
            )
            + " |",
        ]
        lines.append("| --- |" + " ---: |" * len(groups))
        for mode in modes:
            cells = []
            for g in groups:
                mine = [r for r in rows if r["mode"] == mode and r.get("group") == g]
                rounds = statistics.fmean(r["rounds"] for r in mine)
                cells.append(f"{sum(r['correct'] for r in mine)}/{len(mine)}, {rounds:.2f} rounds")
            lines.append(f"| {mode} | " + " | ".join(cells) + " |")
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
    parser.add_argument("--videos", default="", help="duration:seed pairs (e.g. 10m:1,3h:1), instead of the product")
    parser.add_argument("--per-video", type=int, default=0, help="at most this many questions per video, spread")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--resume", action="store_true", help="keep the --json file's rows and ask only the rest")
    parser.add_argument("--table", type=Path, nargs="+", default=None, help="print the tables of --json files and exit")
    args = parser.parse_args()
    if args.table:
        reports = [json.loads(path.read_text()) for path in args.table]
        merged = {
            "questions": sum(r["questions"] for r in reports),
            "rows": [row for r in reports for row in r["rows"]],
        }
        sys.stdout.write(table(merged) + "\n")
        return
    report = asyncio.run(run_all(args))
    sys.stdout.write(table(report) + "\n")


if __name__ == "__main__":
    main()
