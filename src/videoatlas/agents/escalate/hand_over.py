"""The search pass: the search agent's own graph, told where the uniform pass looked, its answer the run's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.escalate.look import ANSWER_KEYS
from videoatlas.agents.escalate.passes import AGENTS, run_pass
from videoatlas.agents.escalate.settings import escalate
from videoatlas.agents.escalate.state import EscalateState
from videoatlas.agents.uniform.answer import sheet_intervals
from videoatlas.environment.timefmt import format_ts
from videoatlas.prompts import PromptSet
from videoatlas.runtime.context import AgentContext
from videoatlas.state.models import Cost, Evidence


def handover_question(prompts: PromptSet, question: str, cited: Sequence[Evidence], frames: int) -> str:
    """The question as the search agent gets it: with the moments the uniform answer cited, as a lead, not a fact.

    Every agent takes only a question and its choices, so this is the one way in for what the uniform pass saw
    (its answer is not passed on: the search should not be led to the answer that was not sure enough).
    """
    if not cited:
        return prompts.render("handover_blind.note", question=question, frames=frames).rstrip("\n")
    moments = ", ".join(
        f"{format_ts(e.time, 1)} (within {format_ts(e.start, 1)}-{format_ts(e.end, 1)})"
        for e in sorted(cited, key=lambda e: e.time)
    )
    return prompts.render("handover.note", question=question, moments=moments, frames=frames).rstrip("\n")


async def hand_over(state: EscalateState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Run the search agent (its default settings) on the question and the uniform pass's lead; its answer wins."""
    ctx = runtime.context
    settings = escalate(ctx)
    agent = settings.escalate_to
    k = ctx.config.k
    shown = len(sheet_intervals(ctx.atlas.duration, settings.frames, k)) * k * k  # whole sheets, as the pass drew
    question = handover_question(ctx.prompts, state["question"], state["uniform_evidence"], shown)
    out = await run_pass(ctx, agent, {}, question, state["choices"])
    cost: Cost = out["cost"]
    return {
        **{key: out[key] for key in ANSWER_KEYS},
        "cost": cost,
        "repairs": out["repairs"],
        "search_agent": agent,
        "search_cost": cost,
        "search_extras": AGENTS[agent].views.result_extras(out),
    }
