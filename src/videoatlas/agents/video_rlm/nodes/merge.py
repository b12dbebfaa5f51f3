"""After every worker of a round returned: fold duplicate evidence and report the round."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.video_rlm.nodes.views import explored_share
from videoatlas.agents.video_rlm.state.master import MasterState
from videoatlas.runtime.calls import emit
from videoatlas.runtime.context import AgentContext
from videoatlas.state.models import Evidence

_SAME_MOMENT_S = 0.05


def duplicates(evidence: list[Evidence]) -> list[Evidence]:
    """Items showing the same moment as an earlier, more confident one (to erase)."""
    drop: list[Evidence] = []
    kept: list[Evidence] = []
    for item in sorted(evidence, key=lambda e: (-e.confidence, e.id)):
        if any(abs(item.time - k.time) <= _SAME_MOMENT_S for k in kept):
            drop.append(item.model_copy(update={"erased": True}))
        else:
            kept.append(item)
    return drop


async def merge(state: MasterState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Evidence and dead zones were merged by their reducers; drop duplicates and emit progress."""
    ctx = runtime.context
    drop = duplicates(state["evidence"])
    emit(
        "round_done",
        round=state["round"],
        evidence=len(state["evidence"]) - len(drop),
        explored=explored_share(state["dead_zones"], ctx.atlas.duration),
        covered=explored_share(state.get("searched", []), ctx.atlas.duration),
        tokens=state["cost"].tokens,
    )
    return {"evidence": drop} if drop else {}
