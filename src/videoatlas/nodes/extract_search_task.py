"""Turn the question into a concrete visual search task (text only, before any frame is seen)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from videoatlas.graph.context import AgentContext
from videoatlas.nodes.common import ask, choices_block, emit
from videoatlas.state.master import MasterState
from videoatlas.state.schemas import SearchTask


async def extract_search_task(state: MasterState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    """Ask for the search task and initialise the Master's bookkeeping."""
    ctx = runtime.context
    emit("search_task")
    values = {"question": state["question"], "choices": choices_block(state["choices"])}
    reply, cost = await ask(ctx, SearchTask, "extract_search_task", "search_task", [], values)
    emit("search_task_done", search_task=reply.value.search_task)
    return {
        "search_task": reply.value.search_task,
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
