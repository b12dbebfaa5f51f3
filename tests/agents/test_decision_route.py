"""Where a final decision's probabilities come from, over real HTTP against the stand-in VLM (agents/decision.py).

A text-only decision on an endpoint that serves ``/v1/decisions`` (the stand-in started with ``decisions`` on, as
vLLM 0.33 serving Qwen3.5) takes them from one decisions read of the text the chat call shows; on an endpoint
without it (the stand-in's default: 501, as vLLM for any other model) one request detects that for the whole
process and the chat reply's log-probabilities give them; a decision with images never asks decisions. The
decisions here are VideoSeek's final answer (text only), made through its own templates.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from videoatlas.agents.decision import decide_on_evidence
from videoatlas.agents.registry import get_agent, settings_of
from videoatlas.agents.videoseek.views import PLANNER_SYSTEM
from videoatlas.environment.atlas import VideoAtlas
from videoatlas.environment.cache import RenderCache
from videoatlas.environment.frames import FrameSource
from videoatlas.llm import decisions
from videoatlas.llm.chat_model import OpenAICompatibleChat
from videoatlas.llm.client import VLMClient
from videoatlas.llm.images import ImagePart
from videoatlas.llm.logprobs import choice_probabilities, read_tokens
from videoatlas.llm.records import CallRecord
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runtime.calls import as_image
from videoatlas.runtime.context import AgentContext, RunConfig
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = pytest.mark.e2e

QUESTION = "Which number does the sign by the door show?"
CHOICES = ["seven", "two", "nine"]
SAID = '[A] 00:10.0-00:12.0: "The sign by the door shows the number two, in red."'


@pytest.fixture(autouse=True)
def new_process() -> Iterator[None]:
    """Each test starts as a new process does: no endpoint's verdict on decisions known."""
    decisions.forget()
    yield
    decisions.forget()


@contextmanager
def standin(record: Path, serves_decisions: bool) -> Iterator[RunningServer]:
    """A stand-in recording every request it receives, serving decisions or answering them 501."""
    with RunningServer(StandinServer(StandinConfig(decisions=serves_decisions, record=record))) as server:
        yield server


@asynccontextmanager
async def seek_context(video: Path, tmp: Path, server: RunningServer) -> AsyncIterator[tuple[AgentContext, list[Any]]]:
    """VideoSeek's run context on ``video`` with a real model client to ``server``: the context, its call records."""
    config = RunConfig.of(agent="videoseek", cell_px=64)
    endpoint = EndpointSettings(base_url=server.base_url, model=server.standin.config.model)
    chat = OpenAICompatibleChat(settings=endpoint)
    records: list[CallRecord] = []
    source = FrameSource(video)
    atlas = VideoAtlas(source, k=config.k, cell_px=config.cell_px, cache=RenderCache(tmp / "renders"))
    vlm = VLMClient(chat, endpoint, on_record=records.append)
    prompts = get_agent("videoseek").load_prompts(config.prompts)
    ctx = AgentContext(atlas=atlas, vlm=vlm, prompts=prompts, config=config, settings=settings_of(config))
    try:
        yield ctx, records
    finally:
        source.close()
        await chat.aclose()


async def seek_answer(ctx: AgentContext, images: list[ImagePart] | None = None) -> dict[str, Any]:
    """VideoSeek's final decision on what it heard (text only, as its answer node asks it; or with ``images``)."""
    values = {"duration": "01:00", "history": "turn 1: heard 00:00-01:00", "evidence": "(none)", "subtitles": SAID}
    state = {"question": QUESTION, "choices": CHOICES}
    return await decide_on_evidence(
        ctx, state, [], system=PLANNER_SYSTEM, images=images or [], values=values, stop="test", thinker="planner"
    )


def recorded(record: Path, endpoint: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [line["body"] for line in lines if line.get("endpoint", "/v1/chat/completions") == endpoint]


async def test_a_text_only_decision_takes_its_probabilities_from_the_decisions_route(
    counter_video: Path, tmp_path: Path
) -> None:
    record = tmp_path / "requests.jsonl"
    with standin(record, serves_decisions=True) as server:
        async with seek_context(counter_video, tmp_path, server) as (ctx, records):
            out = await seek_answer(ctx)
        stats = server.standin.stats.as_dict()
        (body,) = recorded(record, "/v1/decisions")
        # The same read again, to know what the server answered (its policy reads the same text alike).
        again = httpx.post(f"{server.base_url}/decisions", json=body, timeout=120).json()
    (question,) = body["questions"]
    assert question == {
        "type": "choice",
        "name": "answer",
        "instructions": f"Which of the choices answers the question: {QUESTION}",
        "choices": [{"value": choice} for choice in CHOICES],
    }
    # The text the chat call shows: its system prompt, a blank line, its user text (the question, what was said...).
    (chat,) = recorded(record, "/v1/chat/completions")
    system, user = (m["content"] for m in chat["messages"])
    # Less the reply format note (JSON with an index), which would contradict the letter vLLM's read asks for.
    note = get_agent("videoseek").load_prompts("default").note("format_choices.note")
    assert user.endswith(note + "\n") and note not in body["input"]
    assert body["input"] == system.rstrip("\n") + "\n\n" + user.removesuffix(note + "\n") + "\n"
    assert QUESTION in user and SAID in user
    served = [p["probability"] for p in again["answers"][0]["probabilities"]]
    assert out["probabilities"] == [round(p, 4) for p in served]
    assert sum(out["probabilities"]) == pytest.approx(1.0, abs=1e-3)
    assert out["probabilities"][1] > max(out["probabilities"][0], out["probabilities"][2])  # what was said: "two"
    assert out["answer"] in CHOICES and out["confidence"] == out["probabilities"][out["answer_index"]]
    # The chat call gives the answer and asks for no log-probabilities; the read is a call of its own, counted.
    assert "logprobs" not in chat and (stats["decision_requests"], stats["logprobs_requests"]) == (1, 0)
    assert [r.schema for r in records] == ["Decisions", "FinalDecision"] and records[0].prompt_tokens > 0
    cost = out["cost"]
    assert cost.calls == 2 and cost.prompt_tokens == stats["prompt_tokens"]
    assert cost.completion_tokens == stats["completion_tokens"] and cost.cached_tokens == stats["cached_tokens"]
    assert cost.tokens_by_role == {"planner": cost.prompt_tokens + cost.completion_tokens}


async def test_without_decisions_one_request_detects_it_and_the_logprobs_give_the_probabilities(
    counter_video: Path, tmp_path: Path
) -> None:
    record = tmp_path / "requests.jsonl"
    outs: list[dict[str, Any]] = []
    with standin(record, serves_decisions=False) as server:
        for run in ("first", "second"):  # two runs in one process, each with a client of its own
            async with seek_context(counter_video, tmp_path / run, server) as (ctx, records):
                outs.append(await seek_answer(ctx))
            assert [r.schema for r in records] == ["FinalDecision"]  # the request that detected is no call
        stats = server.standin.stats.as_dict()
        chats = recorded(record, "/v1/chat/completions")
        # The last reply again, with its log-probabilities, to know what the server sent.
        reply = httpx.post(f"{server.base_url}/chat/completions", json=chats[-1], timeout=120).json()
    assert len(recorded(record, "/v1/decisions")) == 1 and stats["errors"] == {"decisions_not_served": 1}
    assert len(chats) == 2 and all(c["logprobs"] is True and c["top_logprobs"] == 20 for c in chats)
    choice = reply["choices"][0]
    read = choice_probabilities(read_tokens(choice["logprobs"]), choice["message"]["content"], len(CHOICES))
    assert read is not None
    for out in outs:
        assert out["probabilities"] == [round(p, 4) for p in read]
        assert sum(out["probabilities"]) == pytest.approx(1.0, abs=1e-3)
        assert out["confidence"] == out["probabilities"][out["answer_index"]] and out["cost"].calls == 1


async def test_a_decision_with_images_never_asks_decisions(counter_video: Path, tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    with standin(record, serves_decisions=True) as server:
        async with seek_context(counter_video, tmp_path, server) as (ctx, records):
            text_only = await seek_answer(ctx)  # the endpoint is known to serve decisions from here on
            view = await ctx.atlas.agrid(())
            pictured = await seek_answer(ctx, [as_image(view.image, "the whole video")])
        stats = server.standin.stats.as_dict()
    assert len(recorded(record, "/v1/decisions")) == 1 and stats["decision_requests"] == 1  # the text-only one
    assert [r.schema for r in records] == ["Decisions", "FinalDecision", "FinalDecision"]
    (with_image,) = [c for c in recorded(record, "/v1/chat/completions") if c.get("logprobs")]
    assert any(part["type"] == "image_url" for part in with_image["messages"][1]["content"])
    assert pictured["probabilities"] is not None and text_only["probabilities"] is not None
    assert sum(pictured["probabilities"]) == pytest.approx(1.0, abs=1e-3) and pictured["cost"].calls == 1
    assert pictured["confidence"] == pictured["probabilities"][pictured["answer_index"]]
