"""Speech at length: does each agent hear a fact said once in a long track (``synth/long_talk.py``)?

For each duration, writes a long spoken video (hall boards that never bear on a question, a routine
announcement every 1.5-2 minutes, and three facts each said once: a city, a name, a room number),
then asks each agent the three spoken questions with no subtitle file and ``--speech auto``, against
the stand-in (its ear: Whisper tiny.en). Each (duration, agent) gets a run store of its own, so what
the first question heard is read back by the others, as in an eval; the audio columns are the
three questions' total. ``--speech full`` (the whole track at the first look) is the reference:
``--modes auto,full``.

Prints a Markdown table, one row per (duration, agent, mode): right answers, how many of the answers
cite evidence, the answers, the audio heard (seconds, share of the track, requests), mean tokens and
wall time.

Usage: python benchmarks/bench_speech_long.py --out bench-data/speech-long [--durations 10m,1h]
       [--agents video-rlm,uniform] [--modes auto,full] [--routine-gap 8,12] [--json rows.json]

``--routine-gap 8,12`` makes the track a dense one (an announcement every 8-12 s, as a talk never
pauses long) instead of mostly silence.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bench_speech_agents import report_on_standin, speech_parser
from videoatlas.environment.timefmt import parse_time
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import run_question
from videoatlas.runtime.config import RunConfig
from videoatlas.runtime.speech import forget as forget_speech
from videoatlas.synth import speech
from videoatlas.synth.long_talk import ROUTINE_GAP_S, Talk, long_talk


def video_of(out: Path, talk: Talk, gap: tuple[float, float]) -> Path:
    """The talk's video in ``out`` (written once; the same duration, seed and gap give the same file)."""
    dense = "" if gap == ROUTINE_GAP_S else f"-every{gap[0]:g}-{gap[1]:g}s"
    path = out / f"talk-{talk.duration:g}s{dense}.mp4"
    if not path.exists():
        partial = path.with_suffix(".partial.mp4")
        speech.write_speech_video(partial, cards=talk.cards, lines=talk.lines, duration=talk.duration)
        partial.rename(path)
    return path


async def measure(
    out: Path,
    durations: list[float],
    agents: list[str],
    modes: list[str],
    endpoint: EndpointSettings,
    gap: tuple[float, float] = ROUTINE_GAP_S,
) -> list[dict[str, Any]]:
    rows = []
    for duration in durations:
        talk = long_talk(duration, routine_gap=gap)
        video = video_of(out, talk, gap)
        for agent in agents:
            for mode in modes:
                store = out / f"{agent}-{mode}-{video.stem.removeprefix('talk-')}.db"
                store.unlink(missing_ok=True)
                forget_speech()  # as a new process: what an earlier agent heard is in its own store only
                began = time.perf_counter()
                results = []
                for q in talk.questions:
                    config = RunConfig.of(agent=agent, speech=mode)
                    results.append(
                        await run_question(
                            video, q.question, list(q.choices), config, endpoint, db_url=f"sqlite:///{store}"
                        )
                    )
                audio = sum(r.cost.audio_s for r in results)
                rows.append(
                    {
                        "duration_s": duration,
                        "agent": agent,
                        "speech": mode,
                        "right": sum(r.answer == q.answer for q, r in zip(talk.questions, results, strict=True)),
                        "grounded": sum(r.grounded for r in results),
                        "answers": [r.answer for r in results],
                        "truth": [q.answer for q in talk.questions],
                        "said_at": list(talk.said_at),
                        "audio_s": round(audio, 1),
                        "heard_share": round(audio / duration, 3),
                        "transcriptions": sum(r.cost.transcriptions for r in results),
                        "transcribe_s": round(sum(r.cost.transcribe_s for r in results), 1),
                        "mean_tokens": round(sum(r.cost.tokens for r in results) / len(results)),
                        "wall_s": round(time.perf_counter() - began, 1),
                    }
                )
                print(json.dumps(rows[-1]), flush=True)  # noqa: T201 - progress of a long benchmark
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| video | agent | speech | right (3) | grounded | answers | audio heard: s (share, requests) "
        "| mean tokens | wall |",
        "| --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['duration_s'] / 60:g} min | {r['agent']} | {r['speech']} | {r['right']}/3 | "
            f"{r.get('grounded', '-')} | "
            f"{', '.join(r['answers'])} | {r['audio_s']:,.0f} ({r['heard_share']:.0%}, {r['transcriptions']}) | "
            f"{r['mean_tokens']:,} | {r['wall_s']:.0f} s |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = speech_parser(__doc__.split("\n")[0], "folder for the videos and the run stores")
    parser.add_argument("--durations", default="10m,1h", help="comma-separated lengths (default 10m,1h)")
    parser.add_argument("--modes", default="auto", help="comma-separated --speech modes (default auto)")
    parser.add_argument(
        "--routine-gap",
        default=",".join(f"{g:g}" for g in ROUTINE_GAP_S),
        help="least,most seconds between routine announcements (default 90,120; 8,12 fills the track)",
    )
    args = parser.parse_args()
    durations = [parse_time(part) for part in args.durations.split(",")]
    agents, modes = args.agents.split(","), args.modes.split(",")
    low, high = (float(part) for part in args.routine_gap.split(","))
    report_on_standin(args, lambda endpoint: measure(args.out, durations, agents, modes, endpoint, (low, high)), table)


if __name__ == "__main__":
    main()
