"""Helpers shared by the adapters: reading annotation files with one-line errors."""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any

from videoatlas.errors import BadInputError
from videoatlas.evals.items import EvalItem


def annotation(root: Path, name: str, dataset: str) -> Path:
    """``root/name``, or a clear error naming what the dataset's root must hold."""
    path = root / name
    if not path.is_file():
        raise BadInputError(f"{dataset}: {path} not found (the --root folder must hold the official {name})")
    return path


def read_json(path: Path) -> Any:
    """Parsed JSON, or a one-line error with the file and position."""
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise BadInputError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInputError(f"{path}: cannot read ({exc})") from None


def field(record: dict[str, Any], key: str, where: str) -> Any:
    """``record[key]``, or an error saying which record lacks it."""
    if not isinstance(record, dict) or key not in record:
        raise BadInputError(f"{where}: missing field {key!r}")
    return record[key]


def first_existing(*paths: Path) -> Path:
    """The first of ``paths`` that exists (else the first, so the error names the expected place)."""
    for p in paths:
        if p.exists():
            return p
    return paths[0]


@dataclass(frozen=True, slots=True)
class Skipped:
    """A record that gave no question, and why (reported by ``eval check`` and counted in the report)."""

    file: str
    record: str
    """The record's id where it has one, else its position in the file."""
    reason: str
    malformed: bool = True
    """True: the record is broken (a fault to fix); False: left out by the benchmark's rules (no public answer)."""

    def as_dict(self) -> dict[str, Any]:
        """Plain data (``--json``, ``eval.json``)."""
        return {"file": self.file, "record": self.record, "reason": self.reason, "malformed": self.malformed}


@dataclass(frozen=True, slots=True)
class VideoToMake:
    """A video of a generated suite that its questions need and that is not made yet (or was left half made)."""

    label: str
    """How its progress names it (``synthetic 10min broadcast``)."""
    video: str
    """The file it becomes, as its questions name it."""
    duration: float
    """Its length in seconds."""

    def as_dict(self) -> dict[str, Any]:
        """Plain data (``--json``)."""
        return {"label": self.label, "video": self.video, "duration": self.duration}


@dataclass(slots=True)
class Loaded:
    """What an adapter read: the questions, and the records it could not turn into one."""

    items: list[EvalItem] = dc_field(default_factory=list)
    skipped: list[Skipped] = dc_field(default_factory=list)
    to_make: list[VideoToMake] = dc_field(default_factory=list)
    """A generated suite's videos that ``items`` need and that are not made yet; a read benchmark has none."""

    def skip(self, file: Path | str, record: object, reason: str, *, malformed: bool = True) -> None:
        """Record one skipped record (the rest of the file is still read)."""
        self.skipped.append(Skipped(str(file), str(record), reason, malformed))


def record_id(record: Any, key: str, fallback: int) -> str:
    """A record's id for messages: ``record[key]`` when it has one, else ``#n`` (its position)."""
    if isinstance(record, dict) and record.get(key) not in (None, ""):
        return str(record[key])
    return f"#{fallback}"


def parquet_rows(path: Path, loaded: Loaded) -> list[dict[str, Any]] | None:
    """The rows of one parquet file, or None with the file recorded as skipped when it cannot be read."""
    import pyarrow.parquet as pq

    try:
        rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    except (OSError, ValueError) as exc:
        loaded.skip(path, "(whole file)", f"not a readable parquet file ({exc})")
        return None
    return rows
