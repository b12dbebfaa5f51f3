"""The final decision, from the evidence rendered as labelled frames plus their descriptions."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.video_rlm.nodes.views import SYSTEM, coverage_text, evidence_block, scratchpad_images
from videoatlas.agents.video_rlm.state.master import MasterState
from videoatlas.errors import EndpointError, ModelReplyError
from videoatlas.runtime.calls import (
    FORMAT_CHOICES,
    FORMAT_OPEN,
    as_image,
    ask,
    choices_block,
    emit,
    failed_call_cost,
    labelled,
)
from videoatlas.runtime.context import AgentContext
from videoatlas.state.models import zones_as_intervals
from videoatlas.state.schemas import cited_ids, decided, decision_schema


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
        "question": state["question"],
        "choices": choices_block(choices),
        "search_task": state["search_task"],
        "evidence": evidence_block(evidence),
        "format": FORMAT_CHOICES if choices else FORMAT_OPEN,
        "coverage": coverage_text(state, ctx.atlas.duration),
    }
    emit("decide")
    stop = state.get("stop_reason") or "evidence sufficient"
    labels = dict(labelled(evidence))
    try:
        reply, cost = await ask(
            ctx, decision_schema(len(choices), list(labels)), "decide", "decide", images, values, system=SYSTEM
        )
    except (ModelReplyError, EndpointError) as exc:
        return {
            "answer": "",
            "answer_index": None,
            "reasoning": f"no valid final decision: {exc}",
            "cited": [],
            "cost": failed_call_cost(exc, "master"),
            "stop_reason": f"{stop}; final decision failed",
        }
    value: Any = reply.value
    cited = cited_ids(value.evidence, labels)
    index, answer = decided(value, choices)
    emit("answer", answer=answer, index=index, grounded=bool(cited))
    return {
        "answer": answer,
        "answer_index": index,
        "reasoning": value.reasoning,
        "cited": cited,
        "cost": cost,
        "stop_reason": stop,
    }
