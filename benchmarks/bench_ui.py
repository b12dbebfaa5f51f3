"""How fast the web UI renders its two heaviest pages (target: each under 1 s).

* the runs page over a store of 10,000 runs (first page, a deep page, a status filter, a text search);
* the run page of a Video-RLM run with at least 200 worker steps (scripted chat on a generated 80 s
  video, an 8x8 grid: 5 rounds of 8 DFS workers, up to 8 steps each), and ``videoatlas report`` of that run.

The UI runs as ``videoatlas ui`` in its own process over SQLite; each figure is the median of
``--repeat`` HTTP requests after one warm-up request (the time until the whole page has arrived).

Usage: python benchmarks/bench_ui.py [--repeat 5] [--runs 10000] [--out results.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import httpx
from sqlalchemy import insert
from sqlalchemy.orm import Session

from agent_helpers import ScriptedChat, actions_of, default_reply, step
from videoatlas.llm.settings import EndpointSettings
from videoatlas.persistence.store import RunRow, TraceStore
from videoatlas.runs import run_question
from videoatlas.runtime.context import RunConfig
from videoatlas.synth.counter import write_counter_video

EXE = str(Path(sys.executable).parent / "videoatlas")
STATUSES = ("finished", "finished", "finished", "failed", "interrupted")


def _cell(schema: dict[str, Any], action: str) -> int | None:
    variants = schema["properties"]["step"].get("anyOf") or [schema["properties"]["step"]]
    defs = schema.get("$defs", {})
    for variant in variants:
        body = defs[variant["$ref"].split("/")[-1]] if "$ref" in variant else variant
        if body["properties"]["action"]["const"] == action and "cell" in body["properties"]:
            return int(body["properties"]["cell"]["enum"][0])
    return None


def busy(name: str, text: str, schema: dict[str, Any]) -> Any:
    """Workers open grids and go back until their step budget runs out; no round is ever enough."""
    if name == "WorkerStep":
        actions = actions_of(schema)
        if "EXPAND" in actions and (cell := _cell(schema, "EXPAND")) is not None:
            return step("EXPAND", [cell], summary=f"opening cell {cell}")
        if "BACKTRACK" in actions:
            return step("BACKTRACK", summary="going back up")
        return step("FINISHED", summary="nothing more here")
    if name == "TraversalChoice":
        return {"traversal": "dfs", "reason": "benchmark"}
    if name == "UncertaintyAnalysis":
        reply = default_reply(name, text, schema)
        return {**reply, "sufficient": False, "reasoning": "keep looking"}
    return default_reply(name, text, schema)


async def long_run(video: Path, db: str) -> str:
    result = await run_question(
        video,
        "What number is shown?",
        ["zero", "one"],
        RunConfig.of(cell_px=48, k=8, workers=8, rounds=5, dfs_steps=8, max_depth=3, min_expand_span_s=0.01),
        EndpointSettings(model="scripted"),
        chat_model=ScriptedChat(script=busy),
        db_url=db,
        run_id="bench-long",
    )
    return result.run_id


def add_runs(db: str, n: int) -> None:
    """``n`` runs written in one transaction (every field a real run has)."""
    store = TraceStore(db)
    start = datetime.now(UTC) - timedelta(days=30)
    rows = [
        {
            "id": f"bench-{i:06d}",
            "created_at": start + timedelta(seconds=60 * i),
            "updated_at": start + timedelta(seconds=60 * i + 30),
            "finished_at": start + timedelta(seconds=60 * i + 30),
            "status": STATUSES[i % len(STATUSES)],
            "agent": ("video-rlm", "uniform", "videoseek")[i % 3],
            "question": f"Which code is shown on a white card during chapter {i}?",
            "choices": ["DL-1501", "ZA-9644", "NX-4548", "WT-1150"],
            "video_path": f"/data/videos/video-{i % 200:03d}.mp4",
            "video_identity": "x" * 16,
            "config": {"k": 8, "cell_px": 320},
            "endpoint": {"base_url": "http://127.0.0.1:8000/v1", "model": "Qwen/Qwen2.5-VL-7B-Instruct"},
            "prompt_set": ("builtin:default", "terse")[i % 2],
            "prompt_sha": "0" * 16,
            "templates": {},
            "subtitle_offset": 0.0,
            "answer": "DL-1501",
            "answer_index": 0,
            "reasoning": "seen",
            "cost": {"tokens": 25000 + i, "calls": 30, "wall_s": 42.0},
            "stop_reason": "evidence sufficient",
        }
        for i in range(n)
    ]
    try:
        with Session(store.engine) as session, session.begin():
            session.execute(insert(RunRow), rows)
    finally:
        store.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def timed(client: httpx.Client, url: str, repeat: int) -> tuple[float, str]:
    client.get(url).raise_for_status()  # warm-up
    times, text = [], ""
    for _ in range(repeat):
        began = time.perf_counter()
        reply = client.get(url)
        reply.raise_for_status()
        text = reply.text
        times.append(time.perf_counter() - began)
    return statistics.median(times), text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--out", default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ui-") as tmp:
        root = Path(tmp)
        os.environ["VIDEOATLAS_HOME"] = str(root / "home")
        db = f"sqlite:///{root / 'runs.db'}"
        video = write_counter_video(root / "counter.mp4", 2000, fps=25.0, gop=50)
        run_id = asyncio.run(long_run(video, db))
        add_runs(db, args.runs)
        port = free_port()
        server = subprocess.Popen([EXE, "ui", "--db", db, "--port", str(port)], stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        results: dict[str, Any] = {"runs_in_store": args.runs + 1, "repeat": args.repeat}
        try:
            with httpx.Client(base_url=base, timeout=60) as client:
                for _ in range(200):
                    try:
                        client.get("/runs")
                        break
                    except httpx.HTTPError:
                        time.sleep(0.05)
                pages = {
                    "runs page 1": "/runs",
                    "runs page 150": "/runs?page=150",
                    "runs status=failed": "/runs?status=failed",
                    "runs search": "/runs?q=chapter+9999",
                    "runs stale": "/runs?status=stale",
                }
                for name, url in pages.items():
                    seconds, text = timed(client, url, args.repeat)
                    results[name] = round(seconds, 4)
                seconds, text = timed(client, f"/runs/{run_id}", args.repeat)
                steps = int(re.search(r'data-steps="(\d+)"', text).group(1))  # type: ignore[union-attr]
                results["run page"] = round(seconds, 4)
                results["run page steps"] = steps
                results["run page KB"] = len(text.encode()) // 1024
        finally:
            server.terminate()
            server.wait(timeout=30)
        began = time.perf_counter()
        subprocess.run([EXE, "report", run_id, "--db", db, "-o", str(root / "r.html")], check=True, capture_output=True)
        results["report (whole command)"] = round(time.perf_counter() - began, 4)
        results["report KB"] = (root / "r.html").stat().st_size // 1024
    for key, value in results.items():
        sys.stdout.write(f"{key:<26} {value}\n")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
