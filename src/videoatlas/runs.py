"""Running one question through the Video-RLM graph: build the context, stream progress, collect the result."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.cache import RenderCache
from videoatlas.environment.frames import FrameSource
from videoatlas.environment.render import evidence_label
from videoatlas.environment.subtitles import load_subtitles
from videoatlas.graph.context import AgentContext, RunConfig
from videoatlas.graph.video_rlm import build_graph
from videoatlas.llm.chat_model import OpenAICompatibleChat
from videoatlas.llm.client import VLMClient
from videoatlas.llm.records import CallRecord
from videoatlas.llm.settings import EndpointSettings
from videoatlas.paths import render_cache_dir
from videoatlas.prompts import load_prompt_set
from videoatlas.state.models import Cost, Evidence

Progress = Callable[[dict[str, Any]], None]


@dataclass(slots=True)
class RunResult:
    """What a question's run produced, and what it cost."""

    run_id: str
    question: str
    choices: list[str]
    answer: str
    answer_index: int | None
    reasoning: str
    evidence: list[Evidence]
    cited: list[str]
    cost: Cost
    rounds: int
    stop_reason: str
    search_task: str
    traversal: str
    wall_s: float
    records: list[CallRecord] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def cache_hit_rate(self) -> float:
        """Share of prompt tokens the server reported as cached."""
        return self.cost.cached_tokens / self.cost.prompt_tokens if self.cost.prompt_tokens else 0.0

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {
            "run_id": self.run_id,
            "question": self.question,
            "choices": self.choices,
            "answer": self.answer,
            "answer_index": self.answer_index,
            "reasoning": self.reasoning,
            "evidence": [
                {
                    "label": evidence_label(i),
                    "time": e.time,
                    "interval": [e.start, e.end],
                    "cell": e.cell,
                    "depth": e.depth,
                    "description": e.description,
                    "confidence": e.confidence,
                    "subtitle": e.subtitle,
                    "cited": e.id in self.cited,
                }
                for i, e in enumerate(self.evidence)
            ],
            "cost": {
                **self.cost.model_dump(),
                "tokens": self.cost.tokens,
                "cache_hit_rate": round(self.cache_hit_rate, 4),
            },
            "rounds": self.rounds,
            "stop_reason": self.stop_reason,
            "search_task": self.search_task,
            "traversal": self.traversal,
            "wall_s": round(self.wall_s, 3),
        }


async def run_question(
    video: str | Path,
    question: str,
    choices: list[str],
    config: RunConfig,
    endpoint: EndpointSettings,
    subtitles: str | Path | None = None,
    subtitle_offset: float = 0.0,
    on_progress: Progress | None = None,
    chat_model: BaseChatModel | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    run_id: str | None = None,
) -> RunResult:
    """Answer one question about one video."""
    prompts = load_prompt_set(config.prompts)
    subs = load_subtitles(subtitles, subtitle_offset) if subtitles else None
    source = FrameSource(video)
    records: list[CallRecord] = []
    try:
        atlas = VideoAtlas(
            source, k=config.k, cell_px=config.cell_px, cache=RenderCache(render_cache_dir()), subtitles=subs
        )
        model = chat_model if chat_model is not None else OpenAICompatibleChat(settings=endpoint)
        vlm = VLMClient(model, endpoint, on_record=records.append, reask=prompts["reask"])
        await vlm.check_model()
        context = AgentContext(atlas=atlas, vlm=vlm, prompts=prompts, config=config, subtitles=subs)
        graph = build_graph(checkpointer if checkpointer is not None else InMemorySaver())
        thread = run_id or uuid.uuid4().hex[:12]
        run_config: dict[str, Any] = {
            "configurable": {"thread_id": thread},
            "max_concurrency": config.max_concurrency,
            "recursion_limit": 500,
        }
        began = time.perf_counter()
        final: dict[str, Any] = {}
        async for namespace, mode, chunk in graph.astream(
            {"question": question, "choices": list(choices)},
            run_config,
            context=context,
            stream_mode=["custom", "values"],
            subgraphs=True,
        ):
            if mode == "custom" and on_progress is not None:
                on_progress(chunk)
            elif mode == "values" and not namespace:  # the Master's state, not a worker's
                final = chunk
        wall = time.perf_counter() - began
    finally:
        source.close()
        if chat_model is None and "model" in locals() and isinstance(model, OpenAICompatibleChat):
            await model.aclose()
    return RunResult(
        run_id=thread,
        question=question,
        choices=list(choices),
        answer=final.get("answer", ""),
        answer_index=final.get("answer_index"),
        reasoning=final.get("reasoning", ""),
        evidence=list(final.get("evidence", [])),
        cited=list(final.get("cited", [])),
        cost=final.get("cost") or Cost(),
        rounds=int(final.get("round", 0)),
        stop_reason=final.get("stop_reason", ""),
        search_task=final.get("search_task", ""),
        traversal=final.get("traversal", ""),
        wall_s=wall,
        records=records,
        state=final,
    )
