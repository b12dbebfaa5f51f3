"""``videoatlas report``: the run page of the web UI written to one self-contained HTML file."""

from __future__ import annotations

import asyncio
from pathlib import Path

from videoatlas.environment.concat import media_duration
from videoatlas.errors import VideoAtlasError
from videoatlas.inspect import load_trace
from videoatlas.persistence.db import resolve_db_url
from videoatlas.ui.history import history
from videoatlas.ui.render import render_report
from videoatlas.ui.view import run_view


def _duration(video: str) -> float | None:
    try:
        return media_duration(video) if Path(video).is_file() else None
    except VideoAtlasError:
        return None


async def report_html(run_id: str, db_url: str | None = None) -> str:
    """The run's page with every image inlined."""
    url = resolve_db_url(db_url)
    trace = await load_trace(run_id, url, with_images=True)
    after = await history(url, trace["agent"], trace["run"]["id"])
    duration = await asyncio.to_thread(_duration, trace["run"]["video"])
    return render_report(run_view(trace, after, duration), trace["images"])


async def write_report(run_id: str, db_url: str | None, out: Path) -> Path:
    """Write the run's page to ``out``."""
    page = await report_html(run_id, db_url)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
