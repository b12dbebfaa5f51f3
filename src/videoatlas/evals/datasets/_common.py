"""Helpers shared by the adapters: reading annotation files with one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from videoatlas.errors import BadInputError


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
