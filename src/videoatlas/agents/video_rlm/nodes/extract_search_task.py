"""Turn the question into a concrete visual search task (text only, before any frame is seen)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.relation import Relation, relation_of
from videoatlas.agents.video_rlm.nodes.views import SYSTEM
from videoatlas.agents.video_rlm.relation import task_sentence
from videoatlas.agents.video_rlm.schemas import SearchTask
from videoatlas.agents.video_rlm.state.master import MasterState
from videoatlas.errors import ModelReplyError
from videoatlas.runtime.calls import ask, choices_block, emit, fallback
from videoatlas.runtime.context import AgentContext
from videoatlas.state.models import Repair


async def extract_search_task(state: MasterState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Ask for the search task and the time relation it asks about, and initialise the Master's bookkeeping.

    The relation (right after, just before, between, first, last, how long after, with its anchor) is
    kept in the state and said in the search task every later prompt shows.
    """
    ctx = runtime.context
    emit("search_task")
    values = {"question": state["question"], "choices": choices_block(state["choices"])}
    repairs: list[Repair] = []
    relation = Relation()
    try:
        reply, cost = await ask(
            ctx, SearchTask, "extract_search_task", "search_task", [], values, system=SYSTEM, thinker="master"
        )
        task = reply.value.search_task.strip()
        relation = relation_of(reply.value)
        by = "model"
        if not task:  # an empty task would tell the workers nothing: they look for what the question asks
            task, by = state["question"], "question"
    except ModelReplyError as exc:
        cost, repair = fallback(exc, "extract_search_task", 0, "the question itself is the search task, no relation")
        task, repairs, by = state["question"], [repair], "question"
    # Every later prompt shows the search task: the relation travels with it, so workers look for the anchor first.
    said = task_sentence(ctx.prompts, relation)
    emit("search_task_done", search_task=task, relation=said, by=by)
    task = f"{task}\n{said}" if said else task
    return {
        "search_task": task,
        "relation": relation,
        "anchor": None,
        "repairs": repairs,
        "round": 0,
        "assignments": [],
        "visits": {},
        "hints": [],
        "checks": [],
        "stop_reason": "",
        "answer": "",
        "answer_index": None,
        "declined": False,
        "probabilities": None,
        "confidence": None,
        "reasoning": "",
        "cited": [],
        "cost": cost,
    }
