"""Video-MME: the official parquet (``videomme/test-*.parquet``), ``data/{videoID}.mp4``, ``subtitle/{videoID}.srt``.

Videos are found as ``.mp4``, ``.MP4`` or ``.mkv`` (the download holds all three). Options come as
``"A. text"``; the letter prefix is stripped (the agent shows its own letters). Some videos have no
subtitles: those questions run without.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from videoatlas.errors import BadInputError
from videoatlas.evals.datasets._common import Loaded, field, first_existing, parquet_rows, record_id
from videoatlas.evals.datasets.adapter import Adapter, in_group, reads
from videoatlas.evals.items import EvalItem, letter_index

NAME = "videomme"
DURATIONS = ("short", "medium", "long")
"""The published splits by video length: the ``--subset`` names."""
VIDEO_SUFFIXES = (".mp4", ".MP4", ".mkv")
_PREFIX = re.compile(r"^\s*[A-Z][.)]\s*")


def video_path(root: Path, video_id: str) -> Path:
    """``data/{videoID}`` with the first suffix that exists (``.mp4`` when none does, for the error)."""
    return first_existing(*(root / "data" / f"{video_id}{suffix}" for suffix in VIDEO_SUFFIXES))


def _item(root: Path, rec: dict[str, Any], where: str) -> EvalItem:
    raw = field(rec, "options", where)
    if not isinstance(raw, list) or len(raw) < 2:
        raise BadInputError(f"{where}: options must be a list of at least two")
    options = [str(o) for o in raw]
    vid = str(field(rec, "videoID", where))
    srt = root / "subtitle" / f"{vid}.srt"
    return EvalItem(
        dataset=NAME,
        id=str(field(rec, "question_id", where)),
        video_id=vid,
        video=str(video_path(root, vid)),
        question=str(field(rec, "question", where)),
        choices=[_PREFIX.sub("", o, count=1) for o in options],
        answer_index=letter_index(str(field(rec, "answer", where)), len(options), where),
        categories=[str(rec.get("task_type", "unknown"))],
        groups={"duration": str(rec.get("duration", "unknown")), "domain": str(rec.get("domain", "unknown"))},
        subtitles=str(srt) if srt.is_file() else None,
    )


def load(root: Path) -> Loaded:
    """Every question of the parquet file(s)."""
    files = sorted(root.glob("*.parquet")) + sorted(root.glob("videomme/*.parquet"))
    if not files:
        raise BadInputError(f"{NAME}: no .parquet annotation under {root} or {root / 'videomme'}")
    loaded = Loaded()
    for path in files:
        for n, rec in enumerate(parquet_rows(path, loaded) or []):
            rid = record_id(rec, "question_id", n)
            try:
                loaded.items.append(_item(root, rec, f"{path.name} record {rid}"))
            except BadInputError as exc:
                loaded.skip(path, rid, str(exc))
    return loaded


ADAPTER = Adapter(NAME, reads(load), subsets=DURATIONS, in_subset=in_group("duration"))
