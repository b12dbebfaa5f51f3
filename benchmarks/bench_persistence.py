"""Per-node overhead of checkpoint + trace writes on SQLite (target: median <= 20 ms).

The agent runs with a scripted chat model that answers at once (so model time is nil) on a
generated 80 s video, twice per repetition: persisted (SQLite checkpoints with durability "sync",
traces) and not persisted (in-memory checkpoints, no traces). Two figures:

* every checkpoint write (``aput`` / ``aput_writes``) timed where it happens, median and p95;
* per node: (persisted run time - in-memory run time) / number of node executions.

Trace writes are queued to a background thread; what the agent pays for them is the enqueue.

Usage: python benchmarks/bench_persistence.py [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from agent_helpers import ScriptedChat, default_reply, step
from videoatlas.llm.settings import EndpointSettings
from videoatlas.logging import configure_logging
from videoatlas.persistence import checkpoint
from videoatlas.runs import run_question
from videoatlas.runtime.context import RunConfig
from videoatlas.synth.counter import write_counter_video

WRITE_TIMES: list[float] = []


def script(name: str, text: str, schema: dict[str, Any]) -> Any:
    if name == "WorkerStep":
        if "(nothing yet)" in text:
            return step("ADD_TO_SCRATCHPAD", [5], [{"cell": 5, "description": "a number", "confidence": 0.9}])
        return step("FINISHED")
    return default_reply(name, text, schema)


def timed_saver_methods() -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    for name in ("aput", "aput_writes"):
        original = getattr(AsyncSqliteSaver, name)

        async def wrapper(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return await _original(self, *args, **kwargs)
            finally:
                WRITE_TIMES.append(time.perf_counter() - began)

        setattr(AsyncSqliteSaver, name, wrapper)


async def one(video: Path, db: str | None, run_id: str) -> tuple[float, int]:
    chat = ScriptedChat(script=script)
    cfg = RunConfig.of(cell_px=64, workers=4, rounds=1)
    began = time.perf_counter()
    result = await run_question(
        video,
        "What number is shown?",
        ["one", "two"],
        cfg,
        EndpointSettings(model="s"),
        chat_model=chat,
        db_url=db,
        persist=db is not None,
        run_id=run_id,
    )
    wall = time.perf_counter() - began
    nodes = 5 + sum(3 * len(r.steps) + 2 for r in result.state["reports"])  # master nodes + worker nodes
    return wall, nodes


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    configure_logging("warning")
    timed_saver_methods()
    assert checkpoint  # the module whose saver is timed
    with tempfile.TemporaryDirectory() as tmp:
        video = write_counter_video(Path(tmp) / "counter.mp4", 2000, fps=25, gop=50)
        db = f"sqlite:///{Path(tmp) / 'bench.db'}"
        await one(video, None, "warm-mem")  # warm render cache and imports
        await one(video, db, "warm-db")
        WRITE_TIMES.clear()
        per_node: list[float] = []
        for i in range(args.runs):
            mem_wall, nodes = await one(video, None, f"mem-{i}")
            db_wall, _ = await one(video, db, f"db-{i}")
            per_node.append((db_wall - mem_wall) / nodes)
    writes = sorted(WRITE_TIMES)
    sys.stdout.write(
        f"checkpoint writes: {len(writes)}, median {statistics.median(writes) * 1000:.2f} ms, "
        f"p95 {writes[int(0.95 * len(writes)) - 1] * 1000:.2f} ms\n"
        f"per-node overhead (persisted - in memory): median {statistics.median(per_node) * 1000:.2f} ms "
        f"over {args.runs} run pairs ({nodes} node executions per run)\n"
    )


if __name__ == "__main__":
    asyncio.run(main())
