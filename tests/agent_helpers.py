"""A scripted chat model and a harness to run the Video-RLM graph without a server."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from videoatlas.agents.registry import get_agent, settings_of
from videoatlas.agents.video_rlm.graph import build_graph
from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.cache import RenderCache
from videoatlas.environment.frames import FrameSource
from videoatlas.environment.timefmt import parse_time
from videoatlas.llm.client import VLMClient
from videoatlas.llm.logprobs import TokenLogprob
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runtime.context import AgentContext, RunConfig
from videoatlas.runtime.speech import open_speech

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


def listed_cells(text: str, video_end: float | None = None) -> list[tuple[int, float, float, str]]:
    """The cells a Video-RLM prompt lists by start time (``12: 00:41.30 [explored]``): id, start, end, marks.

    Each ends where the next starts; the last where the list's header says (a clock time, as a worker's view
    gives it) or, where the header names the end of the video, at ``video_end``.
    """
    header, rest = text.split(" by start time (", 1)[1].split("\n", 1)
    rest = rest.split("\nWhat is said", 1)[0].split("\n\n", 1)[0]  # the list alone
    last = re.findall(r"the last until ([\d:.]+)\)", header)
    cells = [(int(i), parse_time(a), marks) for i, a, marks in re.findall(r"^(\d+): ([\d:.]+)(.*)$", rest, re.M)]
    end = parse_time(last[0]) if last else video_end
    assert end is not None, f"the list's last cell has no end: {header!r}"
    ends = [t for _, t, _ in cells[1:]] + [end]
    return [(i, a, b, marks) for (i, a, marks), b in zip(cells, ends, strict=True)]


def user_head(messages: list[BaseMessage]) -> str:
    """The user's text before the first image (what a call's template put above ``${images}``); "" if none."""
    head = ""
    for m in messages:
        if isinstance(m, HumanMessage) and isinstance(m.content, list):
            for part in m.content:
                if isinstance(part, dict) and part.get("type") == "image_url":
                    return head
                if isinstance(part, dict) and part.get("type") == "text":
                    head += part["text"]
            return ""
    return ""


def sent_images(messages: list[BaseMessage]) -> list[bytes]:
    """The JPEG bytes of every image part of ``messages``."""
    out = []
    for m in messages:
        if isinstance(m.content, list):
            for part in m.content:
                if isinstance(part, dict) and part.get("type") == "image_url":
                    out.append(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))
    return out


class ScriptedChat(BaseChatModel):
    """Replies by calling ``script``; optional per-call delay; keeps every (schema, text) it saw.

    ``formats`` keeps each call's whole ``response_format``, as it would be sent to a server.
    """

    script: Any
    delay: Any = None
    seen: list[tuple[str, str]] = Field(default_factory=list)
    formats: list[dict[str, Any]] = Field(default_factory=list)
    images: list[list[bytes]] = Field(default_factory=list)
    """Each call's images (JPEG bytes), in the order they were sent."""
    messages: list[list[BaseMessage]] = Field(default_factory=list)
    """Each call's messages, as sent."""
    logprobs: Any = None
    """(schema name, reply text) -> the reply's tokens with their log-probabilities (``TokenLogprob``s), sent when
    the call asks for them (``logprobs=True``), as a server does."""
    asked_logprobs: list[bool] = Field(default_factory=list)
    """Whether each call asked for log-probabilities."""
    usage: Any = None
    token_counts: list[int] = Field(default_factory=list)
    """Prompt plus completion tokens reported for each call."""
    """(messages, reply text) -> (prompt tokens, completion tokens[, cached tokens]); default 1000 and 20."""

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
        self.images.append(sent_images(messages))
        self.messages.append(list(messages))
        if self.delay is not None:
            await asyncio.sleep(self.delay(fmt["name"], text))
        reply = self.script(fmt["name"], text, fmt["schema"])
        content = reply if isinstance(reply, str) else json.dumps(reply)
        counted: tuple[int, ...] = self.usage(messages, content) if self.usage is not None else (1000, 20)
        prompt, completion = counted[0], counted[1]
        usage: dict[str, Any] = {
            "input_tokens": prompt,
            "output_tokens": completion,
            "total_tokens": prompt + completion,
        }
        if len(counted) > 2:  # (prompt, completion, cached): the server's prefix cache served ``cached``
            usage["input_token_details"] = {"cache_read": counted[2]}
        self.token_counts.append(prompt + completion)
        asked = bool(kwargs.get("logprobs"))
        self.asked_logprobs.append(asked)
        tokens = self.logprobs(fmt["name"], content) if asked and self.logprobs is not None else None
        message = AIMessage(content=content, usage_metadata=usage, response_metadata={"logprobs": tokens or ()})
        return ChatResult(generations=[ChatGeneration(message=message)])


def answer_logprobs(at_answer: dict[str, float]) -> Any:
    """A server that is sure of every token but the decision's answer, where ``at_answer`` are the alternatives."""

    def tokens(name: str, content: str) -> list[TokenLogprob]:
        if name != "FinalDecision":
            return [TokenLogprob(content, 0.0, ((content, 0.0),))]
        start = content.index('"answer": ') + len('"answer": ')
        value_end = start + 1
        chosen = content[start:value_end]
        top = tuple((token, math.log(p)) for token, p in at_answer.items())
        return [
            TokenLogprob(content[:start], 0.0, ((content[:start], 0.0),)),
            TokenLogprob(chosen, math.log(at_answer.get(chosen, 1e-3)), top),
            TokenLogprob(content[value_end:], 0.0, ((content[value_end:], 0.0),)),
        ]

    return tokens


def action_logprobs(schema: str, key: str, p_answer: Sequence[float], instead: str) -> Any:
    """A server sure of every token but, in each reply of ``schema`` asked with logprobs, the first token of the string
    value of ``key``: there ``answer`` has ``p_answer[n]`` (the n-th such reply) and ``instead`` the rest."""
    asked: list[int] = []

    def tokens(name: str, content: str) -> list[TokenLogprob]:
        if name != schema:
            return [TokenLogprob(content, 0.0, ((content, 0.0),))]
        p = p_answer[len(asked)]
        asked.append(1)
        start = content.index(f'"{key}": "') + len(f'"{key}": "')
        end = content.index('"', start)
        word = content[start:end]
        top = (("answer", math.log(p)), (instead, math.log(1 - p)))
        return [
            TokenLogprob(content[:start], 0.0),
            TokenLogprob(word, math.log(p if word == "answer" else 1 - p), top),
            TokenLogprob(content[end:], 0.0),
        ]

    return tokens


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
            return {"found": True, "answer": "it is a counter", "reasoning": "seen", "evidence": []}
        return {"judgements": [], "answer": 0, "reasoning": "seen", "evidence": []}
    raise AssertionError(f"unexpected schema {name}")


def step(
    action: str,
    cells: list[int] | None = None,
    items: list[dict[str, Any]] | None = None,
    direction: str = "none",
    summary: str = "done",
) -> dict[str, Any]:
    """A worker reply as the model sends it: ``{"step": {...}}`` with the action and only its fields."""
    body: dict[str, Any] = {"action": action}
    if action in ("EXPAND", "ZOOM", "INVESTIGATE") and cells:
        body["cell"] = cells[0]
    if action == "INVESTIGATE" and direction != "none":
        body["direction"] = direction
    if action == "MARK_PROMISING":
        body["cells"] = cells or []
    if action == "ADD_TO_SCRATCHPAD":
        body["items"] = items or [{"cell": c, "description": summary, "confidence": 0.5} for c in cells or []]
    body["summary"] = summary
    return {"step": body}


def actions_of(schema: dict[str, Any]) -> list[str]:
    """The actions a WorkerStep schema offers (one variant per action, tagged by its ``action`` const)."""
    step_schema = schema["properties"]["step"]
    variants = step_schema.get("anyOf") or step_schema.get("oneOf") or [step_schema]
    defs = schema.get("$defs", {})
    out = []
    for variant in variants:
        if "$ref" in variant:
            variant = defs[variant["$ref"].split("/")[-1]]
        out.append(variant["properties"]["action"]["const"])
    return out


def decided(reply: dict[str, Any]) -> dict[str, Any]:
    """The flat decision a worker acts on, from a :func:`step` reply (as ``flatten_step`` makes it)."""
    body = dict(reply["step"])
    cells = body.get("cells", [body["cell"]] if "cell" in body else [])
    return {
        "action": body["action"],
        "cells": cells,
        "items": body.get("items", []),
        "direction": body.get("direction", "none"),
        "summary": body.get("summary", ""),
    }


def make_context(
    video: Path,
    tmp: Path,
    script: Script,
    config: RunConfig | None = None,
    delay: Any = None,
    usage: Any = None,
    subtitles: Any = None,
    speech_url: str | None = None,
    engine: Any = None,
    max_images: int = 16,
) -> tuple[AgentContext, ScriptedChat, FrameSource]:
    """A context over ``video`` with a scripted chat model; with ``speech_url``, its speech track heard there.

    ``max_images``: the endpoint's image limit per prompt (vLLM's ``--limit-mm-per-prompt``).
    """
    source = FrameSource(video)
    cfg = config or RunConfig.of(cell_px=64)
    atlas = VideoAtlas(source, k=cfg.k, cell_px=cfg.cell_px, cache=RenderCache(tmp / "renders"))
    chat = ScriptedChat(script=script, delay=delay, seen=[], usage=usage)
    settings = EndpointSettings(model="scripted", max_images=max_images)
    prompts = get_agent(cfg.agent).load_prompts(cfg.prompts)
    vlm = VLMClient(chat, settings, reask=prompts["reask"])
    speech = None
    if speech_url is not None:
        speech, _ = open_speech(
            cfg.speech, source.info, source.identity, settings, speech_url=speech_url,
            speech_model=cfg.speech_model or "", has_subtitles=subtitles is not None, engine=engine,
        )  # fmt: skip
    context = AgentContext(
        atlas=atlas, vlm=vlm, prompts=prompts, config=cfg, subtitles=subtitles, speech=speech,
        settings=settings_of(cfg),
    )  # fmt: skip
    return context, chat, source


async def run_graph(
    video: Path,
    tmp: Path,
    script: Script,
    config: RunConfig | None = None,
    question: str = "What number is shown?",
    choices: list[str] | None = None,
    delay: Any = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    usage: Any = None,
    subtitles: Any = None,
) -> tuple[dict[str, Any], ScriptedChat, AgentContext]:
    ctx, chat, source = make_context(video, tmp, script, config, delay, usage, subtitles)
    graph = build_graph(checkpointer or InMemorySaver())
    try:
        out = await graph.ainvoke(
            {"question": question, "choices": ["one", "two"] if choices is None else choices},
            {
                "configurable": {"thread_id": "t"},
                "recursion_limit": 500,
            },
            context=ctx,
        )
    finally:
        source.close()
        if ctx.speech is not None:
            await ctx.speech.aclose()
    return out, chat, ctx
