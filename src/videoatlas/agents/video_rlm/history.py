"""What each Video-RLM round changed, read from the run's checkpoints: evidence and dead zones after its merge.

The last checkpoint holds only the run's final state (evidence erased later is gone from it, dead
zones are merged); the checkpoint taken after each round's merge says what that round added.
"""

from __future__ import annotations

from typing import Any

from videoatlas.agents.registry import state_history
from videoatlas.agents.video_rlm.graph import AGENT_NAME


async def rounds_after_merge(url: str, run_id: str) -> dict[int, dict[str, Any]]:
    """Per round: ``evidence`` (records) and ``dead_zones`` as they stood after the round's merge."""
    out: dict[int, dict[str, Any]] = {}
    async for snap in state_history(url, AGENT_NAME, run_id):
        values = snap.values or {}
        if "analyze_uncertainty" in (snap.next or ()) and "round" in values:
            out.setdefault(
                int(values["round"]),
                {"evidence": list(values.get("evidence", [])), "dead_zones": list(values.get("dead_zones", []))},
            )
    return out
