"""Small local copies of the benchmarks in their official layouts, made of the synthetic suite's questions.

The questions are the synthetic video's own (so the stand-in can answer them from the pixels); the
files around them are in each benchmark's official shape: Video-MME's parquet with ``data/`` and
``subtitle/``, LongVideoBench's ``lvb_val.json`` with ``videos/``, LVBench's ``video_info.meta.jsonl``
with its options inside the question text.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from videoatlas.evals.datasets import load_items
from videoatlas.evals.datasets.synthetic import ensure_video
from videoatlas.evals.items import EvalItem, write_items
from videoatlas.limits import CHOICE_LETTERS


def synthetic_items(root: Path, count: int) -> list[EvalItem]:
    """``count`` questions of different kinds about a one-minute synthetic video (chapter style, four choices each)."""
    ensure_video(root, 60.0, 1)
    items = [i for i in load_items("synthetic", root, durations=[60.0], styles=["chapters"]) if len(i.choices) == 4]
    kinds: dict[str, EvalItem] = {}
    for item in items:
        kinds.setdefault(item.categories[0], item)
    chosen = list(kinds.values())[:count]
    assert len(chosen) == count
    return chosen


def write_items_file(path: Path, items: list[EvalItem]) -> Path:
    """An items file (our JSONL format)."""
    return write_items(path, items)


def _video_file(item: EvalItem, folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / name).exists():
        shutil.copy(item.video, folder / name)


def write_videomme(root: Path, items: list[EvalItem]) -> Path:
    """``videomme/test-00000-of-00001.parquet``, ``data/{videoID}.mp4`` and ``subtitle/{videoID}.srt``."""
    (root / "videomme").mkdir(parents=True)
    rows = []
    for n, item in enumerate(items):
        vid = f"vid{item.video_id.replace('-', '')}"
        _video_file(item, root / "data", f"{vid}.mp4")
        if item.subtitles:
            (root / "subtitle").mkdir(exist_ok=True)
            shutil.copy(item.subtitles, root / "subtitle" / f"{vid}.srt")
        rows.append(
            {
                "video_id": f"{n + 1:03d}",
                "duration": "short",
                "domain": "Knowledge",
                "sub_category": "Humanity & History",
                "url": f"https://www.youtube.com/watch?v={vid}",
                "videoID": vid,
                "question_id": f"{n + 1:03d}-1",
                "task_type": "OCR Problems",
                "question": item.question,
                "options": [f"{CHOICE_LETTERS[i]}. {c}" for i, c in enumerate(item.choices)],
                "answer": CHOICE_LETTERS[item.answer_index or 0],
            }
        )
    pq.write_table(pa.Table.from_pylist(rows), root / "videomme" / "test-00000-of-00001.parquet")
    return root


def write_longvideobench(root: Path, items: list[EvalItem]) -> Path:
    """``lvb_val.json`` (candidates, a 0-based correct_choice) and ``videos/``."""
    records = []
    for n, item in enumerate(items):
        name = f"{item.video_id}.mp4"
        _video_file(item, root / "videos", name)
        records.append(
            {
                "video_id": item.video_id,
                "question": item.question,
                "question_wo_referring_query": item.question,
                "candidates": item.choices,
                "correct_choice": item.answer_index,
                "position": [],
                "topic_category": "synthetic",
                "question_category": "T2O",
                "level": "L1-Perception",
                "id": f"lvb-{n}",
                "video_path": name,
                "subtitle_path": None,
                "duration_group": 60,
                "starting_timestamp_for_subtitles": 0,
                "duration": 60.0,
                "type": "local",
                "view_count": 1,
            }
        )
    (root / "lvb_val.json").write_text(json.dumps(records))
    return root


def write_lvbench(root: Path, items: list[EvalItem]) -> Path:
    """``video_info.meta.jsonl`` (options as "(A) ..." inside the question) and ``videos/{key}.mp4``."""
    key = items[0].video_id
    _video_file(items[0], root / "videos", f"{key}.mp4")
    qa = [
        {
            "uid": f"lvbench-{n}",
            "question": "\n".join([item.question, *(f"({CHOICE_LETTERS[i]}) {c}" for i, c in enumerate(item.choices))]),
            "answer": CHOICE_LETTERS[item.answer_index or 0],
            "question_type": ["key information retrieval"],
            "time_reference": "00:05-00:15",
        }
        for n, item in enumerate(items)
    ]
    line = {"key": key, "type": "synthetic", "video_info": {"duration_minutes": 1.0, "fps": 5.0}, "qa": qa}
    (root / "video_info.meta.jsonl").write_text(json.dumps(line) + "\n")
    return root
