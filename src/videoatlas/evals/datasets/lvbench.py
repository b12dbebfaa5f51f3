"""LVBench: ``video_info.meta.jsonl`` (or ``data/video_info.meta.jsonl``; one video per line) and the videos.

Videos are read where the official download script's video2dataset puts them,
``videos/<shard>/<n>.mp4`` with a ``<n>.json`` sidecar per sample and a ``videos/<shard>.parquet``
table, both naming the source video (the file is found by that id, or by its own name), or flat as
``videos/{key}.mp4``. Options are embedded in the question text as ``(A) ...`` lines;
``time_reference`` gives the ground-truth range. A question counts once in each of its
``question_type`` categories.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import structlog

from videoatlas.environment.timefmt import parse_time
from videoatlas.errors import BadInputError
from videoatlas.evals.datasets._common import Loaded, annotation, field, record_id
from videoatlas.evals.datasets.adapter import Adapter, reads
from videoatlas.evals.items import EvalItem, letter_index

log = structlog.get_logger(__name__)

NAME = "lvbench"
QUESTION_TYPES = {
    "ER": "entity recognition",
    "EU": "event understanding",
    "KIR": "key information retrieval",
    "TG": "temporal grounding",
    "Rea": "reasoning",
    "Sum": "summarization",
}
"""The paper's question types (``--subset`` takes the short or the full name)."""
_OPTION = re.compile(r"\(([A-Z])\)\s*")
_ID_FIELDS = ("key", "videoID", "video_id", "youtube_id", "id")


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
    try:
        start, end = parse_time(left), parse_time(right)
    except BadInputError as exc:
        raise BadInputError(f"{where}: time_reference {text!r}: {exc}") from None
    return [start, max(end, start + 1.0)]


def _source_ids(sidecar: dict[str, Any]) -> list[str]:
    """The ids a video2dataset sidecar knows its sample by: id fields, and the YouTube id of its url."""
    ids = [str(sidecar[k]) for k in _ID_FIELDS if isinstance(sidecar.get(k), str | int) and sidecar[k] != ""]
    url = sidecar.get("url")
    if isinstance(url, str) and url:
        parsed = urlparse(url)
        ids += parse_qs(parsed.query).get("v", [])
        tail = parsed.path.rstrip("/").rsplit("/", 1)[-1]
        if tail:
            ids.append(tail)
    return ids


def _shard_rows(table: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    try:
        rows: list[dict[str, Any]] = pq.read_table(table, columns=["key", "url"]).to_pylist()
    except (OSError, ValueError, KeyError) as exc:
        log.warning(
            "video2dataset shard table unreadable; its videos are found by sidecar or name",
            table=str(table),
            error=str(exc),
        )
        return []
    return rows


def video_index(root: Path) -> dict[str, Path]:
    """Video files under ``videos/`` by every name they are known by (flat files win over shards)."""
    folder = root / "videos"
    index: dict[str, Path] = {}
    if not folder.is_dir():
        return index
    for sidecar in sorted(folder.glob("*/*.json")):
        video = sidecar.with_suffix(".mp4")
        if not video.is_file():
            continue
        index.setdefault(video.stem, video)
        try:
            data = json.loads(sidecar.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue  # the video is still found by its own name; the sidecar only adds aliases
        if isinstance(data, dict):
            for source_id in _source_ids(data):
                index.setdefault(source_id, video)
    for table in sorted(folder.glob("*.parquet")):
        # video2dataset's per-shard table: one row per sample, its ``key`` (the file name) and ``url``.
        for row in _shard_rows(table):
            video = folder / table.stem / f"{row.get('key')}.mp4"
            if video.is_file():
                for source_id in _source_ids({"url": row.get("url")}):
                    index.setdefault(source_id, video)
    for video in sorted(folder.glob("*/*.mp4")):
        index.setdefault(video.stem, video)
    for video in sorted(folder.glob("*.mp4")):
        index[video.stem] = video
    return index


def _items(rec: dict[str, Any], video: Path, path: Path, where: str, loaded: Loaded) -> None:
    key = str(field(rec, "key", where))
    info = rec.get("video_info") or {}
    minutes = info.get("duration_minutes") if isinstance(info, dict) else None
    qas = field(rec, "qa", where)
    if not isinstance(qas, list):
        raise BadInputError(f"{where}: qa must be a list")
    for n, qa in enumerate(qas):
        rid = record_id(qa, "uid", n)
        qwhere = f"{where} question {rid}"
        try:
            stem, options = split_options(str(field(qa, "question", qwhere)), qwhere)
            reference = qa.get("time_reference")
            types = qa.get("question_type") or ["unknown"]
            loaded.items.append(
                EvalItem(
                    dataset=NAME,
                    id=str(field(qa, "uid", qwhere)),
                    video_id=key,
                    video=str(video),
                    question=stem,
                    choices=options,
                    answer_index=letter_index(str(field(qa, "answer", qwhere)), len(options), qwhere),
                    categories=[str(t) for t in (types if isinstance(types, list) else [types])],
                    groups={"video_type": str(rec.get("type", "unknown"))},
                    duration=float(minutes) * 60 if minutes is not None else None,
                    evidence=[_time_range(str(reference), qwhere)] if reference else [],
                )
            )
        except BadInputError as exc:
            loaded.skip(path, f"{key}/{rid}", str(exc))


def load(root: Path) -> Loaded:
    """Every question of every video in the metadata file."""
    data_copy = root / "data" / "video_info.meta.jsonl"  # where the official repository keeps it
    path = data_copy if data_copy.is_file() else annotation(root, "video_info.meta.jsonl", NAME)
    videos = video_index(root)
    loaded = Loaded()
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path.name}:{line_no}"
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise BadInputError(f"{where}: a line must be a JSON object")
            key = str(field(rec, "key", where))
            _items(rec, videos.get(key, root / "videos" / f"{key}.mp4"), path, where, loaded)
        except json.JSONDecodeError as exc:
            loaded.skip(path, f"line {line_no}", f"{where}: invalid JSON ({exc.msg})")
        except BadInputError as exc:
            loaded.skip(path, f"line {line_no}", str(exc))
    return loaded


def in_question_types(item: EvalItem, subset: Sequence[str]) -> bool:
    """Whether the item has one of these question types (each named short, ``TG``, or in full)."""
    wanted = {QUESTION_TYPES.get(s, s).lower() for s in subset} | {s.lower() for s in subset}
    return any(c.lower() in wanted for c in item.categories)


ADAPTER = Adapter(
    NAME,
    reads(load),
    subsets=tuple(QUESTION_TYPES),
    aliases={full: short for short, full in QUESTION_TYPES.items()},
    in_subset=in_question_types,
)
