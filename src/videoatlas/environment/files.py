"""Input files checked before any work: cheap (no decoder imported), so a typo is reported at once."""

from __future__ import annotations

import os
from pathlib import Path

from videoatlas.errors import SubtitleError, VideoError


def check_file(path: str | os.PathLike[str]) -> Path:
    """The path as a :class:`Path`, or a clear error if it is not a readable regular file."""
    p = Path(path)
    if not p.exists():
        raise VideoError(f"no such file: {p}")
    if not p.is_file():
        raise VideoError(f"not a regular file: {p}")
    if not os.access(p, os.R_OK):
        raise VideoError(f"file is not readable: {p}")
    if p.stat().st_size == 0:
        raise VideoError(f"file is empty: {p}")
    return p


def check_subtitle_file(path: str | os.PathLike[str]) -> Path:
    """The path as a :class:`Path`, or a clear error if no subtitle file is there."""
    p = Path(path)
    if not p.is_file():
        raise SubtitleError(f"no such subtitle file: {p}")
    return p
