"""A finished Video-RLM run in pictures (``demo``): its root grid, a worker's grid and its evidence scratchpad."""

from __future__ import annotations

from typing import Any

from videoatlas.agents.video_rlm.state.models import found_in_cell
from videoatlas.agents.views import Picture, evidence_pictures
from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.geometry import format_path, parse_path
from videoatlas.state.models import zones_as_intervals


def pictures(state: dict[str, Any], atlas: VideoAtlas) -> list[Picture]:
    """The run's root grid (dead zones blacked out), the grid its first evidence item was found on, its scratchpad."""
    root = atlas.grid((), zones_as_intervals(state.get("dead_zones") or []))
    out = [Picture("root_grid", "root grid with explored regions blacked out", root.image)]
    evidence = state.get("evidence") or []
    cell = found_in_cell(evidence[0]) if evidence else None
    if cell is not None and "/" in cell.strip("/"):
        parent = parse_path(cell, atlas.k)[:-1]
        seen = atlas.grid(parent)
        out.append(Picture("worker_grid", f"the grid a worker found [A] on (cell {format_path(parent)})", seen.image))
    return [*out, *evidence_pictures(state, atlas)]
