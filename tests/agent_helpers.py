"""A scripted chat model and a harness to run the Video-RLM graph without a server."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.cache import RenderCache
from videoatlas.environment.frames import FrameSource
from videoatlas.graph.context import AgentContext, RunConfig
from videoatlas.graph.video_rlm import build_graph
from videoatlas.llm.client import VLMClient
from videoatlas.llm.settings import EndpointSettings
from videoatlas.prompts import load_prompt_set

Script = Callable[[str, str, dict[str, Any]], Any]
"""(schema name, the prompt's text, the JSON schema) -> a reply (dict, or a raw string)."""


def prompt_text(messages: list[BaseMessage]) -> str:
    parts = []
    for m in messages:
        if isinstance(m.content, str):
            parts.append(m.content)
        else:
            parts += [p["text"] for p in m.content if isinstance(p, dict) and p.get("type") == "text"]
    return "\n".join(parts)


def view_start(text: str) -> str:
    """The start time of the view a worker prompt describes ("You are looking at 00:12.5-...")."""
    match = re.search(r"looking at ([\d:.]+)-", text)
    return match.group(1) if match else ""


class ScriptedChat(BaseChatModel):
    """Replies by calling ``script``; optional per-call delay; keeps every (schema, text) it saw.

    ``formats`` keeps each call's whole ``response_format``, as it would be sent to a server.
    """

    script: Any
    delay: Any = None
    seen: list[tuple[str, str]] = Field(default_factory=list)
    formats: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
        raise NotImplementedError("use the async API")

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        fmt = kwargs["response_format"]["json_schema"]
        text = prompt_text(messages)
        self.seen.append((fmt["name"], text))
        self.formats.append(kwargs["response_format"])
        if self.delay is not None:
            await asyncio.sleep(self.delay(fmt["name"], text))
        reply = self.script(fmt["name"], text, fmt["schema"])
        content = reply if isinstance(reply, str) else json.dumps(reply)
        usage = {"input_tokens": 1000, "output_tokens": 20, "total_tokens": 1020}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=content, usage_metadata=usage))])


def default_reply(name: str, text: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Plain, valid answers for every schema: probe the first cells, workers finish, sufficient."""
    if name == "SearchTask":
        return {"search_task": "look for the thing"}
    if name == "TraversalChoice":
        return {"traversal": "dfs", "reason": "one detail"}
    if name == "GlobalProbe":
        n = schema["properties"]["cells"]["minItems"]
        return {"cells": list(range(n)), "reason": "first cells"}
    if name == "WorkerStep":
        return step("FINISHED")
    if name == "UncertaintyAnalysis":
        return {
            "statuses": [],
            "sufficient": True,
            "explore_cells": [],
            "explore_ranges": [],
            "erase": [],
            "reasoning": "enough",
        }
    if name == "FinalDecision":
        if "answer" in schema["properties"] and schema["properties"]["answer"].get("type") == "string":
            return {"answer": "it is a counter", "reasoning": "seen", "evidence": []}
        return {"judgements": [], "answer": 0, "reasoning": "seen", "evidence": []}
    raise AssertionError(f"unexpected schema {name}")


def step(
    action: str,
    cells: list[int] | None = None,
    items: list[dict[str, Any]] | None = None,
    direction: str = "none",
    summary: str = "done",
) -> dict[str, Any]:
    return {"action": action, "cells": cells or [], "direction": direction, "items": items or [], "summary": summary}


def make_context(
    video: Path, tmp: Path, script: Script, config: RunConfig | None = None, delay: Any = None
) -> tuple[AgentContext, ScriptedChat, FrameSource]:
    source = FrameSource(video)
    cfg = config or RunConfig(cell_px=64)
    atlas = VideoAtlas(source, k=cfg.k, cell_px=cfg.cell_px, cache=RenderCache(tmp / "renders"))
    chat = ScriptedChat(script=script, delay=delay, seen=[])
    settings = EndpointSettings(model="scripted")
    prompts = load_prompt_set(cfg.prompts)
    vlm = VLMClient(chat, settings, reask=prompts["reask"])
    return AgentContext(atlas=atlas, vlm=vlm, prompts=prompts, config=cfg), chat, source


async def run_graph(
    video: Path,
    tmp: Path,
    script: Script,
    config: RunConfig | None = None,
    question: str = "What number is shown?",
    choices: list[str] | None = None,
    delay: Any = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> tuple[dict[str, Any], ScriptedChat, AgentContext]:
    ctx, chat, source = make_context(video, tmp, script, config, delay)
    graph = build_graph(checkpointer or InMemorySaver())
    try:
        out = await graph.ainvoke(
            {"question": question, "choices": ["one", "two"] if choices is None else choices},
            {
                "configurable": {"thread_id": "t"},
                "max_concurrency": ctx.config.task_concurrency,
                "recursion_limit": 500,
            },
            context=ctx,
        )
    finally:
        source.close()
    return out, chat, ctx
