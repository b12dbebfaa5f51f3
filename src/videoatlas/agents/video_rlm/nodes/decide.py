"""The final decision, from the evidence rendered as labelled frames plus their descriptions."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.decision import DecisionCall, cite_labels, decide_final
from videoatlas.agents.video_rlm.nodes.views import SYSTEM, coverage_text, evidence_block, scratchpad_images
from videoatlas.agents.video_rlm.state.master import MasterState
from videoatlas.runtime.calls import as_image, decision_values, labelled
from videoatlas.runtime.context import AgentContext
from videoatlas.state.models import zones_as_intervals


async def decide(state: MasterState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Judge each choice against the evidence and answer; a failed reply is recorded, never guessed."""
    ctx = runtime.context
    evidence = state["evidence"]
    # The overview first, then the evidence: the same images, in the same order, as the last
    # uncertainty analysis, so the whole prefix is served from the server's cache.
    root = await ctx.atlas.agrid((), zones_as_intervals(state["dead_zones"]))
    images = [as_image(root.image, "root grid")]
    images += await scratchpad_images(ctx, evidence)
    choices = state["choices"]
    values = {
        **decision_values(state["question"], choices),
        "search_task": state["search_task"],
        "evidence": evidence_block(evidence),
        "coverage": coverage_text(state, ctx.atlas.duration),
    }
    labels = dict(labelled(evidence))
    call = DecisionCall(
        node="decide",
        template="decide",
        system=SYSTEM,
        images=images,
        values=values,
        choices=choices,
        labels=list(labels),
        stop=state.get("stop_reason") or "evidence sufficient",
        step="final decision",
    )
    return await decide_final(ctx, call, cite_labels(labels))
