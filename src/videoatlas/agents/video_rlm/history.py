"""What each Video-RLM round changed, read from the run's checkpoints: evidence and dead zones after its merge.

The last checkpoint holds only the run's final state (evidence erased later is gone from it, dead
zones are merged); the checkpoint taken after each round's merge says what that round added.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot


async def rounds_after_merge(snapshots: AsyncIterator[StateSnapshot]) -> dict[int, dict[str, Any]]:
    """Per round: ``evidence`` (records) and ``dead_zones`` as they stood after the round's merge."""
    out: dict[int, dict[str, Any]] = {}
    async for snap in snapshots:
        values = snap.values or {}
        if "analyze_uncertainty" in (snap.next or ()) and "round" in values:
            out.setdefault(
                int(values["round"]),
                {"evidence": list(values.get("evidence", [])), "dead_zones": list(values.get("dead_zones", []))},
            )
    return out
