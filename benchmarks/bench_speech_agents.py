"""Speech track benchmark (issue 43): every agent with speech off and auto, on spoken-only and seen-only questions.

Runs each agent on the spoken test video of ``synth/speech.py`` (three facts only said, one only
shown), with no subtitle file, against the stand-in (its ear: Whisper tiny.en), once with
``speech="off"`` and once with ``speech="auto"``; each (agent, mode) gets a run store of its own, so
its first question pays for the transcription and the others read it from the store (what one agent
heard is not carried to the next in this process's memory). Prints a
Markdown table: accuracy on the spoken and the shown questions, mean tokens per question, and the
audio seconds and transcription requests the four questions took in all.

Usage: python benchmarks/bench_speech_agents.py --out bench-data/speech-agents [--agents video-rlm,uniform]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import run_question
from videoatlas.runtime.config import RunConfig
from videoatlas.runtime.speech import forget as forget_speech
from videoatlas.synth import speech
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

AGENTS = ("video-rlm", "videoseek", "videoarm", "eea", "uniform")
MODES = ("off", "auto")


async def measure(out: Path, agents: list[str], endpoint: EndpointSettings) -> list[dict[str, Any]]:
    video = speech.write_speech_video(out / "speech.mp4")
    rows = []
    for agent in agents:
        for mode in MODES:
            db = f"sqlite:///{out / f'{agent}-{mode}.db'}"
            (out / f"{agent}-{mode}.db").unlink(missing_ok=True)
            forget_speech()  # as a new process: what an earlier agent heard is in its own store only
            runs = []
            began = time.perf_counter()
            for q in speech.QUESTIONS:
                config = RunConfig.of(agent=agent, speech=mode)
                result = await run_question(video, q.question, list(q.choices), config, endpoint, db_url=db)
                runs.append((q, result))
            spoken = [r.answer == q.answer for q, r in runs if q.sense == "speech"]
            shown = [r.answer == q.answer for q, r in runs if q.sense == "pixels"]
            rows.append(
                {
                    "agent": agent,
                    "speech": mode,
                    "spoken": f"{sum(spoken)}/{len(spoken)}",
                    "shown": f"{sum(shown)}/{len(shown)}",
                    "mean_tokens": round(sum(r.cost.tokens for _, r in runs) / len(runs)),
                    "audio_s": round(sum(r.cost.audio_s for _, r in runs), 1),
                    "transcriptions": sum(r.cost.transcriptions for _, r in runs),
                    "transcribe_s": round(sum(r.cost.transcribe_s for _, r in runs), 2),
                    "wall_s": round(time.perf_counter() - began, 1),
                }
            )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| agent | speech | spoken-only (3) | seen-only (1) | mean tokens | audio s (requests, time) | wall |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['agent']} | {r['speech']} | {r['spoken']} | {r['shown']} | {r['mean_tokens']:,} | "
            f"{r['audio_s']:.1f} ({r['transcriptions']}, {r['transcribe_s']:.2f} s) | {r['wall_s']:.1f} s |"
        )
    return "\n".join(lines)


def speech_parser(description: str, out_help: str) -> argparse.ArgumentParser:
    """The options every speech benchmark takes: where to write, which agents, a JSON copy of the rows."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, required=True, help=out_help)
    parser.add_argument("--agents", default=",".join(AGENTS), help="comma-separated agents (default: all five)")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here too")
    return parser


def report_on_standin(
    args: argparse.Namespace,
    measure: Callable[[EndpointSettings], Coroutine[Any, Any, list[dict[str, Any]]]],
    table: Callable[[list[dict[str, Any]]], str],
) -> None:
    """Run ``measure`` against an in-process stand-in, then print its rows as a table (and write them as JSON)."""
    args.out.mkdir(parents=True, exist_ok=True)
    with RunningServer(StandinServer(StandinConfig())) as server:
        rows = asyncio.run(measure(EndpointSettings(base_url=server.base_url, model="")))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print(table(rows))  # noqa: T201 - a benchmark script's report


def main() -> None:
    args = speech_parser(__doc__.split("\n")[0], "folder for the video and the run stores").parse_args()
    report_on_standin(args, lambda endpoint: measure(args.out, args.agents.split(","), endpoint), table)


if __name__ == "__main__":
    main()
