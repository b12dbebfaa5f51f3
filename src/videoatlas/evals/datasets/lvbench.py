"""LVBench: ``video_info.meta.jsonl`` (one video per line, its questions under ``qa``), ``videos/{key}.mp4``.

Options are embedded in the question text as ``(A) ...`` lines; ``time_reference`` gives the
ground-truth range. A question counts once in each of its ``question_type`` categories.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from videoatlas.environment.timefmt import parse_time
from videoatlas.errors import BadInputError
from videoatlas.evals.datasets._common import annotation, field
from videoatlas.evals.items import EvalItem, letter_index

NAME = "lvbench"
_OPTION = re.compile(r"\(([A-Z])\)\s*")


def split_options(text: str, where: str) -> tuple[str, list[str]]:
    """Split ``"Q? (A) x (B) y"`` into ``("Q?", ["x", "y"])``; the letters must run A, B, C, ..."""
    parts = _OPTION.split(text)
    stem, rest = parts[0].strip(), parts[1:]
    letters, options = rest[0::2], [o.strip() for o in rest[1::2]]
    if len(options) < 2 or letters != [chr(ord("A") + i) for i in range(len(letters))]:
        raise BadInputError(f"{where}: cannot find options (A), (B), ... in the question text")
    return stem, options


def _time_range(text: str, where: str) -> list[float]:
    left, sep, right = text.partition("-")
    if not sep:
        raise BadInputError(f"{where}: time_reference {text!r} is not START-END")
    start, end = parse_time(left), parse_time(right)
    return [start, max(end, start + 1.0)]


def load(root: Path) -> list[EvalItem]:
    """Every question of every video in the metadata file."""
    path = annotation(root, "video_info.meta.jsonl", NAME)
    items = []
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{line_no}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadInputError(f"{where}: invalid JSON ({exc.msg})") from None
        key = str(field(rec, "key", where))
        info = rec.get("video_info") or {}
        minutes = info.get("duration_minutes")
        for qa in field(rec, "qa", where):
            qwhere = f"{where} question {qa.get('uid', '?')}"
            stem, options = split_options(str(field(qa, "question", qwhere)), qwhere)
            reference = qa.get("time_reference")
            types = qa.get("question_type") or ["unknown"]
            items.append(
                EvalItem(
                    dataset=NAME,
                    id=str(field(qa, "uid", qwhere)),
                    video_id=key,
                    video=str(root / "videos" / f"{key}.mp4"),
                    question=stem,
                    choices=options,
                    answer_index=letter_index(str(field(qa, "answer", qwhere)), len(options), qwhere),
                    categories=[str(t) for t in (types if isinstance(types, list) else [types])],
                    groups={"video_type": str(rec.get("type", "unknown"))},
                    duration=float(minutes) * 60 if minutes is not None else None,
                    evidence=[_time_range(str(reference), qwhere)] if reference else [],
                )
            )
    return items
