"""LongVideoBench: ``lvb_val.json`` with ``videos/`` and ``subtitles/`` beside it.

Subtitle times are on the clock of the original upload; the clip starts at
``starting_timestamp_for_subtitles``, so that amount is subtracted from every cue.
"""

from __future__ import annotations

from pathlib import Path

from videoatlas.errors import BadInputError
from videoatlas.evals.datasets._common import annotation, field, read_json
from videoatlas.evals.items import EvalItem, resolve

NAME = "longvideobench"


def load(root: Path) -> list[EvalItem]:
    """Every question of the validation split (the test split has no public answers)."""
    path = annotation(root, "lvb_val.json", NAME)
    data = read_json(path)
    if not isinstance(data, list):
        raise BadInputError(f"{path}: expected a JSON list of questions")
    items = []
    for n, rec in enumerate(data):
        where = f"{path} item {n}"
        candidates = field(rec, "candidates", where)
        correct = field(rec, "correct_choice", where)
        if not isinstance(candidates, list) or not isinstance(correct, int) or not 0 <= correct < len(candidates):
            raise BadInputError(f"{where}: correct_choice must index candidates")
        subtitle = rec.get("subtitle_path")
        items.append(
            EvalItem(
                dataset=NAME,
                id=str(field(rec, "id", where)),
                video_id=str(field(rec, "video_id", where)),
                video=resolve(root / "videos", field(rec, "video_path", where)),
                question=str(field(rec, "question", where)),
                choices=[str(c) for c in candidates],
                answer_index=correct,
                categories=[str(rec.get("question_category", "unknown"))],
                groups={
                    "duration_group": str(rec.get("duration_group", "unknown")),
                    "topic": str(rec.get("topic_category", "unknown")),
                    "level": str(rec.get("level", "unknown")),
                },
                duration=float(rec["duration"]) if rec.get("duration") is not None else None,
                subtitles=resolve(root / "subtitles", subtitle) if subtitle else None,
                subtitle_offset=-float(rec.get("starting_timestamp_for_subtitles") or 0.0),
            )
        )
    return items
