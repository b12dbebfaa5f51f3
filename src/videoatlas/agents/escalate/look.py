"""The uniform pass: the uniform baseline's own graph, run first, its answer the run's until a search replaces it."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.escalate.passes import run_pass
from videoatlas.agents.escalate.rule import hands_over
from videoatlas.agents.escalate.settings import escalate
from videoatlas.agents.escalate.state import EscalateState
from videoatlas.runtime.calls import emit
from videoatlas.runtime.context import AgentContext
from videoatlas.state.models import Cost

UNIFORM = "uniform"
LOOKED_EVENT = "escalate_looked"
"""The progress event that says what the uniform pass answered and whether the run hands over."""


async def look_uniformly(state: EscalateState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Run the uniform baseline with this run's ``frames``; keep its answer and say what it cost."""
    ctx = runtime.context
    settings = escalate(ctx)
    out = await run_pass(ctx, UNIFORM, {"frames": settings.frames}, state["question"], state["choices"])
    cost: Cost = out["cost"]
    escalated = hands_over(out["confidence"], settings.escalate_below)
    emit(LOOKED_EVENT, confidence=out["confidence"], below=settings.escalate_below, escalated=escalated)
    return {
        **{key: out[key] for key in ANSWER_KEYS},
        "cost": cost,
        "repairs": out["repairs"],
        "escalated": escalated,
        "search_agent": settings.escalate_to if escalated else "",
        "uniform_answer": out["answer"],
        "uniform_answer_index": out["answer_index"],
        "uniform_confidence": out["confidence"],
        "uniform_evidence": [e for e in out["evidence"] if e.id in out["cited"]],
        "uniform_cost": cost,
        "search_cost": None,
        "search_extras": {},
    }


ANSWER_KEYS = (
    "answer",
    "answer_index",
    "declined",
    "probabilities",
    "confidence",
    "reasoning",
    "cited",
    "evidence",
    "stop_reason",
    "round",
)
"""The answer keys an agent's output holds that the run's answer is (cost and repairs are added, not replaced)."""
