"""Turn the question into a concrete visual search task (text only, before any frame is seen)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.agents.video_rlm.nodes.views import SYSTEM
from videoatlas.agents.video_rlm.schemas import SearchTask
from videoatlas.agents.video_rlm.state.master import MasterState
from videoatlas.errors import ModelReplyError
from videoatlas.runtime.calls import ask, choices_block, emit, fallback
from videoatlas.runtime.context import AgentContext
from videoatlas.state.models import Repair


async def extract_search_task(state: MasterState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Ask for the search task and initialise the Master's bookkeeping."""
    ctx = runtime.context
    emit("search_task")
    values = {"question": state["question"], "choices": choices_block(state["choices"])}
    repairs: list[Repair] = []
    try:
        reply, cost = await ask(ctx, SearchTask, "extract_search_task", "search_task", [], values, system=SYSTEM)
        task = reply.value.search_task
    except ModelReplyError as exc:
        cost, repair = fallback(exc, "extract_search_task", 0, "the question itself is the search task")
        task, repairs = state["question"], [repair]
    emit("search_task_done", search_task=task)
    return {
        "search_task": task,
        "repairs": repairs,
        "round": 0,
        "assignments": [],
        "visits": {},
        "hints": [],
        "checks": [],
        "stop_reason": "",
        "answer": "",
        "answer_index": None,
        "reasoning": "",
        "cited": [],
        "cost": cost,
    }
