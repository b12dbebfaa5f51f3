"""The selection: from the memory frames and every candidate's span, fused score and reason, the next step.

The policy call (sampled at temperature 0.5, as the paper's calls are) either names a candidate to
expand, any leaf of the tree (backtracking allowed), or answers. Past the round cap, or with the
run's budget spent, the answer follows without a call. A reply that cannot be used expands the
candidate with the highest fused score, and that is recorded. The window beside a time relation's
anchor, once seen, is expanded next without asking: the anchor found once bounds the search.

Whether to answer is held to the server's probability that the step's ``action`` is ``answer``
(:func:`~videoatlas.llm.logprobs.settled`, ``--confidence``): an answer below it expands the candidate
with the highest fused score instead (the round's thought says so); an exploration whose P(answer)
reaches it (a threshold under 0.5) answers. Without logprobs the policy's own choice stands.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from videoatlas.agents.eea.evaluate import candidates, shortest_opened
from videoatlas.agents.eea.schemas import select_schema
from videoatlas.agents.eea.settings import EEASettings, eea
from videoatlas.agents.eea.state import EEAState
from videoatlas.agents.eea.views import (
    SYSTEM,
    candidate_scores,
    candidates_block,
    history_block,
    memory_block,
    opened_block,
)
from videoatlas.environment.render import ScratchTile
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import ModelReplyError
from videoatlas.llm.images import ImagePart
from videoatlas.llm.logprobs import option_probability, settled
from videoatlas.runtime.calls import as_image, ask, budget_exhausted, choices_block, emit, fallback
from videoatlas.runtime.context import AgentContext
from videoatlas.state.models import Repair

TEMPERATURE = 0.5
"""The paper's sampling temperature for its model calls, kept for the policy's choice."""
ACTIONS = ("explore", "answer")
"""What the selection's ``step`` may do; whether it answers is held to the server's P(answer) (``--confidence``)."""


async def memory_images(ctx: AgentContext, times: list[float], px: int | None = None) -> list[ImagePart]:
    """The memory frames as labelled evidence pages ([A], [B]... in time order), tiles ``px`` wide (None: cells')."""
    if not times:
        return []
    pages = await ctx.atlas.ascratchpad([ScratchTile(i, t) for i, t in enumerate(times)], px=px)
    return [as_image(page, f"memory {n + 1}") for n, page in enumerate(pages)]


def scoring(settings: EEASettings) -> str:
    """How the candidates' scores were made, in words for the prompt."""
    if settings.uarf:
        return "the assistant's relevance score fused with how well the search queries match frames inside it"
    return "the assistant's relevance score"


async def select(state: EEAState, runtime: Runtime[AgentContext]) -> Command[Literal["evaluate", "answer"]]:
    """Pick the next segment to expand, or go to the answer."""
    ctx = runtime.context
    settings = eea(ctx)
    rounds = state.get("rounds") or []
    round_no = len(rounds)
    pool = candidates(state["segments"], shortest_opened(ctx, settings))
    if round_no >= settings.expansions:
        return Command(goto="answer", update={"stop_reason": f"{settings.expansions} rounds done", "selected": None})
    spent = budget_exhausted(state["cost"], ctx.config.call_budget, ctx.config.token_budget)
    if spent or not pool:
        return Command(goto="answer", update={"stop_reason": spent or "nothing left to expand", "selected": None})
    due = next((c for c in pool if c.id == state.get("window_segment")), None)
    if due is not None:
        thought = f"{due.explanation}: expanded next"
        emit("selected", round=round_no, segment=due.id, thought=thought)
        done = rounds[-1].model_copy(update={"choice": f"segment {due.id}", "thought": thought})
        return Command(goto="evaluate", update={"rounds": [done], "selected": due.id})
    memory = state.get("memory") or []
    values = {
        "question": state["question"],
        "choices": choices_block(state["choices"]),
        "duration": format_ts(ctx.atlas.duration, 0),
        "round": round_no,
        "rounds": settings.expansions,
        "memory": memory_block(memory),
        "candidates": candidates_block(pool),
        "candidate_scores": candidate_scores(pool),
        "history": history_block(rounds, state["segments"]),
        "scoring": scoring(settings),
        "opened": opened_block(rounds, state["segments"]),
    }
    images = await memory_images(ctx, [m.time for m in memory])
    best = max(pool, key=lambda s: (s.fused, -s.id))
    sure: float | None = None
    try:
        reply, cost = await ask(
            ctx, select_schema([s.id for s in pool]), "select", "select", images, values,
            system=SYSTEM, thinker="searcher", meta={"round": round_no}, temperature=TEMPERATURE, logprobs=True,
        )  # fmt: skip
        value: Any = reply.value
        step, thought = value.step, value.thought
        choice = int(step.segment) if step.action == "explore" else None
        repairs: list[Repair] = []
        if step.action == "explore" and choice not in {s.id for s in pool}:
            detail = f"segment {step.segment} is no candidate: {best.id} (best score) expanded instead"
            repairs.append(Repair(node="select", round=round_no, kind="fallback", detail=detail))
            choice = best.id
        sure = option_probability(reply.tokens, reply.record.reply_text, ("step", "action"), "answer", ACTIONS)
    except ModelReplyError as exc:
        cost, repair = fallback(exc, "select", round_no, f"the candidate with the best score ({best.id}) expanded")
        choice, thought, repairs = best.id, "(no usable selection)", [repair]
    stop_reason = "the policy answered"
    if choice is None and not settled(True, sure, settings.confidence):
        # An answer the server is not sure enough of: the search goes on where the scores point.
        thought = f"{thought} [answer held back: P(answer) {sure:.2f} below --confidence {settings.confidence:g}]"
        choice = best.id
    elif choice is not None and settled(False, sure, settings.confidence):
        stop_reason = f"the policy answered: P(answer) {sure:.2f} reached --confidence {settings.confidence:g}"
        choice = None
    chosen = "answer" if choice is None else f"segment {choice}"
    done = rounds[-1].model_copy(update={"choice": chosen, "thought": thought})
    emit("selected", round=round_no, segment=choice, thought=thought)
    update = {"cost": cost, "repairs": repairs, "rounds": [done], "selected": choice}
    if choice is None:
        return Command(goto="answer", update={**update, "stop_reason": stop_reason})
    return Command(goto="evaluate", update=update)
