"""Pick BFS or DFS from the question's wording (or take the user's choice)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.video_rlm.nodes.views import SYSTEM
from videoatlas.agents.video_rlm.schemas import TraversalChoice
from videoatlas.agents.video_rlm.settings import rlm
from videoatlas.agents.video_rlm.state.master import MasterState
from videoatlas.errors import ModelReplyError
from videoatlas.runtime.calls import ask, choices_block, emit, fallback
from videoatlas.runtime.context import AgentContext


async def choose_traversal(state: MasterState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """BFS for sequence, order and counting questions, DFS for localized details; ``--traversal`` wins."""
    ctx = runtime.context
    if rlm(ctx).traversal != "auto":
        emit("traversal", traversal=rlm(ctx).traversal, reason="set by the user", by="user")
        return {"traversal": rlm(ctx).traversal, "traversal_reason": "set by the user"}
    # From the question alone: this call runs beside the search-task extraction, not after it,
    # which takes one model call off every question's critical path.
    values = {"question": state["question"], "choices": choices_block(state["choices"])}
    try:
        reply, cost = await ask(
            ctx, TraversalChoice, "choose_traversal", "traversal", [], values, system=SYSTEM, thinker="master"
        )
    except ModelReplyError as exc:
        # DFS, the paper's default mode: one localized detail is what most questions ask for.
        cost, repair = fallback(exc, "choose_traversal", 0, "DFS, the default traversal")
        emit("traversal", traversal="dfs", reason=repair.detail, by="default")
        return {"traversal": "dfs", "traversal_reason": repair.detail, "cost": cost, "repairs": [repair]}
    emit("traversal", traversal=reply.value.traversal, reason=reply.value.reason, by="model")
    return {"traversal": reply.value.traversal, "traversal_reason": reply.value.reason, "cost": cost}
