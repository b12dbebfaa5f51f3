"""Node-level tracing: a wrapper that records when a node started, how long it took, and what came out."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog
from langgraph.runtime import Runtime

from videoatlas.llm.records import CANCELLED, CallRecord
from videoatlas.persistence.store import TraceStore, json_summary
from videoatlas.runtime.context import AgentContext

Node = Callable[[Any, Runtime[AgentContext]], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class RunTracer:
    """Where a run's traces go: its nodes, model calls and the images the model saw, written to its store."""

    store: TraceStore
    run_id: str

    def node_event(self, node: str, phase: str, began: float, duration_s: float | None = None, **fields: Any) -> None:
        """Node ``node`` started (``phase`` ``start``) or ended (``end``, after ``duration_s``)."""
        self.store.node_event(self.run_id, node, phase, began, duration_s, **fields)

    def model_call(self, record: CallRecord) -> None:
        """A model call ended, however it ended."""
        self.store.model_call(self.run_id, record)

    def image(self, sha256: str, label: str, width: int, height: int, jpeg: bytes) -> None:
        """An image sent to the model (kept once per content)."""
        self.store.artifact(sha256, label, width, height, jpeg)


def _summary_in(state: Any) -> str:
    keys = ("worker", "round", "view", "target")
    picked = {k: state[k] for k in keys if isinstance(state, dict) and k in state}
    return json_summary(picked)


def _summary_out(result: Any) -> str:
    update = getattr(result, "update", result)
    goto = getattr(result, "goto", None)
    if isinstance(update, dict):
        shown = {k: v for k, v in update.items() if k not in ("steps", "cells", "reports")}
        text = json_summary(shown)
    else:
        text = json_summary(update)
    if goto:
        count = len(goto) if isinstance(goto, list | tuple) else 1
        text = f"goto({count}) " + text
    return text


def traced(name: str, node: Node) -> Any:
    """Wrap ``node`` so every execution takes one of the run's slots and is recorded in its trace store."""

    async def run(state: Any, runtime: Runtime[AgentContext]) -> Any:
        async with runtime.context.slots:
            return await _run(state, runtime)

    async def _run(state: Any, runtime: Runtime[AgentContext]) -> Any:
        tracer = runtime.context.tracer
        worker = state.get("worker") if isinstance(state, dict) else None
        round_no = state.get("round") if isinstance(state, dict) else None
        # Every log line emitted inside the node carries its node and worker (the run id is bound
        # by the runner); node tasks are asyncio tasks, so the binding stays with this node.
        with structlog.contextvars.bound_contextvars(node=name, worker=worker):
            if tracer is None:
                return await node(state, runtime)
            return await _traced_call(tracer, name, node, state, runtime, worker, round_no)

    run.__name__ = name
    run.__doc__ = node.__doc__
    return run


async def _traced_call(
    tracer: RunTracer,
    name: str,
    node: Node,
    state: Any,
    runtime: Runtime[AgentContext],
    worker: str | None,
    round_no: int | None,
) -> Any:
    began = time.time()
    tracer.node_event(name, "start", began, worker=worker, round_no=round_no, summary_in=_summary_in(state))

    def end(**outcome: str) -> None:
        tracer.node_event(name, "end", began, time.time() - began, worker=worker, round_no=round_no, **outcome)

    try:
        result = await node(state, runtime)
    except (asyncio.CancelledError, KeyboardInterrupt):
        end(error=CANCELLED)  # stopped from outside: no error of the node's, and no text worth showing
        raise
    except BaseException as exc:
        end(error=f"{type(exc).__name__}: {exc}")
        raise
    end(summary_out=_summary_out(result))
    return result
