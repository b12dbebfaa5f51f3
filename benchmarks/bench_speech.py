"""Speech benchmark (issue 25): how well the stand-in's ear (Whisper tiny.en) hears espeak-ng, and a spoken eval set.

1. Writes the spoken test video of ``synth/speech.py`` and an ``items.jsonl`` of its questions into
   ``--out`` (run ``videoatlas eval run --dataset jsonl --root OUT ...`` on it).
2. Sends the video's whole track, then each phrase below spoken alone, to the stand-in's
   ``/v1/audio/transcriptions`` over HTTP, and scores what came back against how the phrase is
   written: word accuracy (1 - word error rate, at least 0; words lower-cased, punctuation dropped,
   ``7:30`` and ``7.30`` both ``730``) and number accuracy (the share of the phrase's numbers heard as numbers).

The phrases are the track's three sentences and seven more in the same voice, some in the track's
style (numbers said as words in a sentence, common names) and some not (digits read one by one, a
rare name, "three hundred and eight"), so the design choice is measured rather than asserted.

Usage: python benchmarks/bench_speech.py --out bench-data/speech [--json results.json]
       python benchmarks/bench_speech.py --out bench-data/held-out --held-out   # the held-out set instead
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from videoatlas.environment.audio import RATE
from videoatlas.llm.settings import EndpointSettings
from videoatlas.llm.transcribe import Transcriber, join_text
from videoatlas.synth import speech
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

PHRASES: list[tuple[str, str, bool]] = [
    # (what espeak-ng says, how it is written, in the track's style)
    (speech.LINES[0].text, speech.LINES[0].text, True),
    ("Your driver today is Maria.", "Your driver today is Maria.", True),
    ("The meeting starts at seven thirty in room four hundred.", "The meeting starts at 7:30 in room 400.", True),
    ("Please note, the gate number is twelve.", "Please note, the gate number is 12.", True),
    ("The bus to Leeds departs at nine fifteen.", "The bus to Leeds departs at 9:15.", True),
    ("Call Peter on extension five hundred.", "Call Peter on extension 500.", True),
    ("The meeting starts at seven thirty in room forty two.", "The meeting starts at 7:30 in room 42.", True),
    ("The ferry leaves from pier two six six five.", "The ferry leaves from pier 2665.", False),
    ("Our guide this morning is Siobhan.", "Our guide this morning is Siobhan.", False),
    ("Room three hundred and eight is on the left.", "Room 308 is on the left.", False),
    ("The code is seven one four nine.", "The code is 7149.", False),
]  # fmt: skip


def words(text: str) -> list[str]:
    """Lower-case words, clock times and decimals joined into one number (``7:30`` -> ``730``)."""
    text = re.sub(r"(\d)[:.](\d)", r"\1\2", text.lower())
    return re.findall(r"[a-z0-9']+", text)


def numbers(text: str) -> list[str]:
    return [w for w in words(text) if w.isdigit()]


def wer(reference: list[str], heard: list[str]) -> float:
    """Word error rate: edit distance over words, divided by the reference's length."""
    row = list(range(len(heard) + 1))
    for i, ref in enumerate(reference, start=1):
        prev, row[0] = row[0], i
        for j, hyp in enumerate(heard, start=1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ref != hyp))
    return row[-1] / max(1, len(reference))


def score(written: str, heard: str) -> dict[str, Any]:
    said = numbers(written)
    got = numbers(heard)
    return {
        "written": written,
        "heard": heard,
        "word_accuracy": round(max(0.0, 1.0 - wer(words(written), words(heard))), 3),
        "numbers": len(said),
        "numbers_heard": sum(1 for n in said if n in got),
    }


def write_items(out: Path) -> Path:
    video = speech.write_speech_video(out / "speech.mp4")
    lines = [
        {
            "dataset": "jsonl",
            "id": f"speech-{i}",
            "video_id": "speech",
            "video": video.name,
            "question": q.question,
            "choices": list(q.choices),
            "answer_index": q.choices.index(q.answer),
            "categories": [q.sense],
            "duration": speech.DURATION_S,
        }
        for i, q in enumerate(speech.QUESTIONS)
    ]
    (out / "items.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return video


def write_held_out(out: Path) -> Path:
    """The held-out set: spoken answers asked about without a verb of saying (``synth/speech.py``'s HELD_OUT)."""
    main = speech.write_speech_video(out / "speech.mp4")
    other = speech.write_speech_video(out / "boat.mp4", cards=speech.HELD_OUT_CARDS, lines=speech.HELD_OUT_LINES)
    lines = [
        {
            "dataset": "jsonl",
            "id": f"held-out-{i}",
            "video_id": (other if i == 0 else main).stem,
            "video": (other if i == 0 else main).name,
            "question": q.question,
            "choices": list(q.choices),
            "answer_index": q.choices.index(q.answer),
            "categories": ["unasked"],
            "duration": speech.DURATION_S,
        }
        for i, q in enumerate(speech.HELD_OUT)
    ]
    (out / "items.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return main


async def measure(video: Path) -> dict[str, Any]:
    from videoatlas.environment.audio import read_audio
    from videoatlas.environment.geometry import Interval

    with RunningServer(StandinServer(StandinConfig())) as server:
        ear = Transcriber(EndpointSettings(base_url=server.base_url, model=""), "")
        began = time.perf_counter()
        track = await ear.transcribe(read_audio(video, Interval(0.0, speech.DURATION_S)), 0.0, RATE)
        track_s = time.perf_counter() - began
        phrases = []
        for said, written, styled in PHRASES:
            began = time.perf_counter()
            pad = np.zeros(RATE, np.int16)  # a second of silence either side, as the lines have in the track
            got = await ear.transcribe(np.concatenate([pad, speech.speak(said), pad]), 0.0, RATE)
            phrases.append({**score(written, join_text(got.segments)), "styled": styled,
                            "seconds": round(time.perf_counter() - began, 2)})  # fmt: skip
        await ear.close()
    written_track = " ".join(w for s, w, _ in PHRASES[:3])
    summary: dict[str, Any] = {}
    for name, rows in (
        ("track style", [p for p in phrases if p["styled"]]),
        ("other", [p for p in phrases if not p["styled"]]),
    ):
        summary[name] = {
            "phrases": len(rows),
            "word_accuracy": round(sum(p["word_accuracy"] for p in rows) / len(rows), 3),
            "numbers_heard": f"{sum(p['numbers_heard'] for p in rows)}/{sum(p['numbers'] for p in rows)}",
        }  # fmt: skip
    return {
        "track": {**score(written_track, join_text(track.segments)), "seconds": round(track_s, 2),
                  "segments": [[round(s.start, 2), round(s.end, 2), s.text] for s in track.segments]},
        "phrases": phrases,
        "summary": summary,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the video and items.jsonl")
    parser.add_argument("--json", type=Path, default=None, help="write the results here too")
    parser.add_argument(
        "--held-out", action="store_true", help="write the held-out set instead (spoken answers, asked without 'say')"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    video = write_held_out(args.out) if args.held_out else write_items(args.out)
    results = asyncio.run(measure(video))
    text = json.dumps(results, indent=2)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    print(text)  # noqa: T201 - a benchmark script's report


if __name__ == "__main__":
    main()
