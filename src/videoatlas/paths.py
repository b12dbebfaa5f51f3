"""Where videoatlas keeps its data: ``$VIDEOATLAS_HOME``, else the XDG data directory."""

from __future__ import annotations

import os
from pathlib import Path


def home_dir() -> Path:
    """The data directory (read from the environment on each call, never at import)."""
    explicit = os.environ.get("VIDEOATLAS_HOME")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "videoatlas"


def render_cache_dir() -> Path:
    """Content-addressed rendered images."""
    return home_dir() / "cache" / "renders"
