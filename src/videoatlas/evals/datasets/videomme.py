"""Video-MME: the official parquet (``videomme/test-*.parquet``), ``data/{videoID}.mp4``, ``subtitle/{videoID}.srt``.

Options come as ``"A. text"``; the letter prefix is stripped (the agent shows its own letters).
Some videos have no subtitles: those questions run without.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from videoatlas.errors import BadInputError
from videoatlas.evals.datasets._common import field
from videoatlas.evals.items import EvalItem, letter_index

NAME = "videomme"
_PREFIX = re.compile(r"^\s*[A-Z][.)]\s*")


def _rows(root: Path) -> list[dict[str, Any]]:
    files = sorted(root.glob("*.parquet")) + sorted(root.glob("videomme/*.parquet"))
    if not files:
        raise BadInputError(f"{NAME}: no .parquet annotation under {root} or {root / 'videomme'}")
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = []
    for f in files:
        try:
            rows += pq.read_table(f).to_pylist()
        except (OSError, ValueError) as exc:
            raise BadInputError(f"{f}: not a readable parquet file ({exc})") from None
    return rows


def load(root: Path) -> list[EvalItem]:
    """Every question of the parquet file(s)."""
    items = []
    for n, rec in enumerate(_rows(root)):
        where = f"{NAME} row {n}"
        options = [str(o) for o in field(rec, "options", where)]
        vid = str(field(rec, "videoID", where))
        srt = root / "subtitle" / f"{vid}.srt"
        items.append(
            EvalItem(
                dataset=NAME,
                id=str(field(rec, "question_id", where)),
                video_id=vid,
                video=str(root / "data" / f"{vid}.mp4"),
                question=str(field(rec, "question", where)),
                choices=[_PREFIX.sub("", o, count=1) for o in options],
                answer_index=letter_index(str(field(rec, "answer", where)), len(options), where),
                categories=[str(rec.get("task_type", "unknown"))],
                groups={"duration": str(rec.get("duration", "unknown")), "domain": str(rec.get("domain", "unknown"))},
                subtitles=str(srt) if srt.is_file() else None,
            )
        )
    return items
