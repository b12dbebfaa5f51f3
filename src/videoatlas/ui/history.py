"""What a Video-RLM round changed, read from the run's checkpoints: evidence and dead zones after each merge.

The last checkpoint holds only the run's final state (evidence erased later is gone from it, dead
zones are merged); the checkpoint taken after each round's merge says what that round added.
"""

from __future__ import annotations

from typing import Any

from videoatlas.agents.registry import all_agents, get_agent
from videoatlas.persistence.checkpoint import open_checkpointer


async def rounds_after_merge(url: str, agent: str, run_id: str) -> dict[int, dict[str, Any]]:
    """Per round: ``evidence`` (records) and ``dead_zones`` as they stood after the round's merge.

    Agents without rounds (no ``merge`` node) give an empty mapping.
    """
    if agent != "video-rlm":
        return {}
    all_agents()
    out: dict[int, dict[str, Any]] = {}
    async with open_checkpointer(url) as saver:
        graph = get_agent(agent).build(saver)
        async for snap in graph.aget_state_history({"configurable": {"thread_id": run_id}}):
            values = snap.values or {}
            if "analyze_uncertainty" in (snap.next or ()) and "round" in values:
                out.setdefault(
                    int(values["round"]),
                    {"evidence": list(values.get("evidence", [])), "dead_zones": list(values.get("dead_zones", []))},
                )
    return out
