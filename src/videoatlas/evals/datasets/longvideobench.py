"""LongVideoBench: ``lvb_val.json`` (or the Hugging Face parquet form) with ``videos/`` and ``subtitles/``.

The parquet form has ``option0`` .. ``option4`` columns instead of ``candidates``, with ``"N/A"``
where a question has fewer options. Subtitle times are on the clock of the original upload; the
clip starts at ``starting_timestamp_for_subtitles``, so that amount is subtracted from every cue.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from videoatlas.errors import BadInputError
from videoatlas.evals.datasets._common import Loaded, field, parquet_rows, read_json, record_id
from videoatlas.evals.datasets.adapter import Adapter, in_group, reads
from videoatlas.evals.items import EvalItem, resolve

NAME = "longvideobench"
DURATION_GROUPS = ("15", "60", "600", "3600")
"""The paper's duration groups (seconds): the ``--subset`` names."""
_PADDING = "N/A"


def _group(value: Any) -> str:
    """``600``, ``600.0`` and ``"600"`` are one duration group."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value) if value is not None else "unknown"


def _candidates(rec: dict[str, Any], where: str) -> list[str]:
    if "candidates" in rec:
        candidates = rec["candidates"]
        if not isinstance(candidates, list):
            raise BadInputError(f"{where}: candidates must be a list")
        return [str(c) for c in candidates]
    options = [rec.get(f"option{i}") for i in range(5)]
    if all(o is None for o in options):
        raise BadInputError(f"{where}: missing field 'candidates' (or option0..option4)")
    return [str(o) for o in options if o is not None and str(o) != _PADDING]


def _item(root: Path, rec: dict[str, Any], where: str) -> EvalItem:
    candidates = _candidates(rec, where)
    correct = field(rec, "correct_choice", where)
    if isinstance(correct, str) and len(correct.strip()) == 1 and correct.strip().isalpha():
        correct = ord(correct.strip().upper()) - ord("A")
    if isinstance(correct, bool) or not isinstance(correct, int) or not 0 <= correct < len(candidates):
        raise BadInputError(f"{where}: correct_choice {correct!r} does not index the {len(candidates)} candidates")
    subtitle = rec.get("subtitle_path")
    duration = rec.get("duration")
    try:
        offset = float(rec.get("starting_timestamp_for_subtitles") or 0.0)
        seconds = float(duration) if duration is not None else None
    except (TypeError, ValueError):
        raise BadInputError(f"{where}: duration and starting_timestamp_for_subtitles must be numbers") from None
    return EvalItem(
        dataset=NAME,
        id=str(field(rec, "id", where)),
        video_id=str(field(rec, "video_id", where)),
        video=resolve(root / "videos", field(rec, "video_path", where)),
        question=str(field(rec, "question", where)),
        choices=candidates,
        answer_index=correct,
        categories=[str(rec.get("question_category", "unknown"))],
        groups={
            "duration_group": _group(rec.get("duration_group")),
            "topic": str(rec.get("topic_category", "unknown")),
            "level": str(rec.get("level", "unknown")),
        },
        duration=seconds,
        subtitles=resolve(root / "subtitles", subtitle) if subtitle else None,
        subtitle_offset=-offset,
    )


def _records(root: Path, loaded: Loaded) -> list[tuple[Path, list[Any]]]:
    json_file = root / "lvb_val.json"
    if json_file.is_file():
        data = read_json(json_file)
        if not isinstance(data, list):
            raise BadInputError(f"{json_file}: expected a JSON list of questions")
        return [(json_file, data)]
    files = sorted(root.glob("*.parquet")) + sorted(root.glob("*/*.parquet"))
    if not files:
        raise BadInputError(
            f"{NAME}: {json_file} not found (the --root folder must hold the official lvb_val.json "
            "or the Hugging Face parquet files)"
        )
    return [(f, rows) for f in files if (rows := parquet_rows(f, loaded)) is not None]


def load(root: Path) -> Loaded:
    """Every question of the validation split (test-split records, without answers, are skipped)."""
    loaded = Loaded()
    for path, records in _records(root, loaded):
        for n, rec in enumerate(records):
            rid = record_id(rec, "id", n)
            where = f"{path.name} record {rid}"
            if not isinstance(rec, dict):
                loaded.skip(path, rid, f"{where}: not a JSON object")
                continue
            # The test split publishes no answers (a null, or no column in its own file): left out, not broken.
            if rec.get("correct_choice") is None and ("correct_choice" in rec or "test" in path.name.lower()):
                loaded.skip(path, rid, "no public answer (test split)", malformed=False)
                continue
            try:
                loaded.items.append(_item(root, rec, where))
            except BadInputError as exc:
                loaded.skip(path, rid, str(exc))
    return loaded


ADAPTER = Adapter(NAME, reads(load), subsets=DURATION_GROUPS, in_subset=in_group("duration_group"))
