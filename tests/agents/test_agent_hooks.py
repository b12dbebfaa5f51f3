"""How a run reads back is the agent's own: its page section, history, progress lines and final decision.

A new agent registered with its own hooks is shown by the UI's view code and worded by ``ask``'s
progress without either naming it; one without hooks gets the generic node timeline. The shared
final-decision step records a failed reply as the run's result, never a guess.
"""

from __future__ import annotations

import sys
import types
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from videoatlas.agents import decision, registry
from videoatlas.agents.base import Agent
from videoatlas.agents.page import PageContext
from videoatlas.agents.views import AgentViews
from videoatlas.cli.run_view import describe_event
from videoatlas.errors import ModelReplyError
from videoatlas.runtime.config import AgentSettings, RunConfig
from videoatlas.state.models import Cost, Evidence, FrameRef
from videoatlas.ui.history import history
from videoatlas.ui.render import render_report
from videoatlas.ui.view import run_view

pytestmark = pytest.mark.unit


def _build(checkpointer: Any = None) -> Any:
    raise AssertionError("reading a run back never builds the fake agent's graph")


def register(monkeypatch: pytest.MonkeyPatch, name: str, **hooks: Any) -> Agent:
    """An agent called ``name`` in the registry, from a package that exists only for this test, with these views."""
    agent = Agent(name, _build, {}, f"fake_{name}", AgentSettings, views=AgentViews(**hooks))
    module = types.ModuleType(f"fake_{name}.agent")
    module.AGENT = agent  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(registry.PACKAGES, name, f"fake_{name}")
    return agent


def call(node: str, images: Sequence[str] = ()) -> dict[str, Any]:
    """A model call in the shape :func:`videoatlas.inspect.load_trace` gives."""
    return {
        "node": node,
        "worker": None,
        "round": None,
        "step": None,
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "cached_tokens": 0,
        "latency_s": 0.5,
        "images": list(images),
        "reply_text": '{"answer": 0}',
        "schema": "Reply",
        "outcome": "ok",
        "attempts": 1,
        "error": None,
        "template": f"{node}:0",
        "role": "master",
        "thinking": None,
        "reasoning": "",
        "reasoning_tokens": 0,
        "reasoning_estimated": False,
    }


def trace_of(agent: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """A finished run's trace in the shape :func:`videoatlas.inspect.load_trace` gives."""
    return {
        "run": {
            "id": "r1",
            "status": "finished",
            "question": "which card?",
            "choices": ["red", "blue"],
            "video": "/v.mp4",
            "answer": "red",
            "answer_index": 0,
            "reasoning": "the card is red",
            "stop_reason": "done",
            "error": None,
            "config": {"k": 4},
            "endpoint": {},
            "prompt_set": "builtin:default",
            "prompt_sha": "0",
            "created_at": "2026-01-01T00:00:00+00:00",
            "updated_at": None,
            "finished_at": "2026-01-01T00:01:00+00:00",
            "cost": {},
        },
        "agent": agent,
        "pending": [],
        "detail": {"plan": ["look twice"]},
        "timeline": [
            {
                "node": c["node"],
                "worker": None,
                "round": None,
                "duration_s": 1.0,
                "error": None,
                "calls": 1,
                "tokens": 120,
            }
            for c in calls
        ],
        "evidence": [
            {
                "label": "A",
                "time": 12.0,
                "place": "cell 5/3",
                "where": {"cell": "5/3", "round": 1},
                "description": "a red card",
                "confidence": 0.9,
                "id": "e1",
                "start": 11.0,
                "end": 13.0,
                "subtitle": None,
            }
        ],
        "repairs": [{"node": "glance", "round": 1, "kind": "re-ask", "detail": "cut off", "worker": None}],
        "grounded": True,
        "support": "",
        "cited": ["e1"],
        "cost_state": {},
        "calls": calls,
        "images": {},
        "failure": None,
    }


def test_an_agent_brings_its_own_section_of_the_run_page(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[PageContext] = []

    def page(trace: dict[str, Any], context: PageContext) -> dict[str, Any]:
        seen.append(context)
        plan = trace["detail"]["plan"]
        turns = [
            {"header": f"turn {i + 1}: {step}", "thought": "why not", "observation": "saw it"}
            for i, step in enumerate(plan)
        ]
        return {
            "facts": [("Plan", ", ".join(plan))],
            "turns": turns,
            "steps": len(turns),
            "repairs": [],
            "duration": 64.0,
        }

    register(monkeypatch, "glancer", page=page, decision_node="conclude", decision_grid=True)
    trace = trace_of("glancer", [call("glance", ["a" * 64]), call("conclude", ["b" * 64, "c" * 64])])
    view = run_view(trace, {1: {"seen": True}}, 30.0)

    assert seen == [PageContext(4, 30.0, {1: {"seen": True}})]
    assert view["facts"] == [("Plan", "look twice")] and view["steps"] == 1
    assert view["timeline"] == [] and view["repairs"] == []
    assert view["section_template"] is None and "rounds" not in view  # no agent's own layout in the shared page
    assert view["header"]["duration"] == "01:04.0"  # the section knew the length better than the probe
    # The decision: the agent's deciding call, its first image the root grid, the rest the scratchpad.
    made = view["decision"]
    assert made["call"]["node"] == "conclude" and made["grid"] == "b" * 64 and made["scratchpad"] == ["c" * 64]
    assert [cell["cell"] for cell in made["findings"]] == [5]
    html = render_report(view, {})
    assert "<dt>Plan</dt><dd>look twice</dd>" in html and "turn 1: look twice" in html
    assert "<h2>Timeline</h2>" not in html


def test_an_agent_without_hooks_is_shown_by_its_node_timeline(monkeypatch: pytest.MonkeyPatch) -> None:
    register(monkeypatch, "plain")
    trace = trace_of("plain", [call("glance", ["a" * 64]), call("conclude", ["b" * 64])])
    view = run_view(trace)

    assert [e["node"] for e in view["timeline"]] == ["glance", "conclude"]
    assert view["timeline"][0]["call_list"][0]["tokens"] == 120
    assert view["facts"] == [] and view["turns"] == [] and view["steps"] == 0
    assert view["repairs"] == trace["repairs"]  # nothing shows them elsewhere
    made = view["decision"]  # no deciding node named: the answer and evidence, no call, no grid
    assert made["call"] is None and made["grid"] is None and made["answer"] == "red"
    html = render_report(view, {})
    assert "<h2>Timeline</h2>" in html and "<b>conclude</b>" in html and "re-ask (glance): cut off" in html


async def test_the_run_page_reads_earlier_checkpoints_only_through_the_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, str]] = []
    handed: list[AsyncIterator[Any]] = []

    async def snapshots(url: str, agent: str, run_id: str) -> AsyncIterator[Any]:
        asked.append((url, run_id))
        yield types.SimpleNamespace(values={"round": 1})

    async def rounds(states: AsyncIterator[Any]) -> dict[int, dict[str, Any]]:
        handed.append(states)  # the hook reads the checkpoints it is handed; it never opens the database
        return {snap.values["round"]: {"evidence": []} async for snap in states}

    monkeypatch.setattr("videoatlas.ui.history.state_history", snapshots)
    register(monkeypatch, "historian", history=rounds)
    register(monkeypatch, "forgetful")
    assert await history("sqlite:///x.db", "historian", "r1") == {1: {"evidence": []}}
    assert asked == [("sqlite:///x.db", "r1")] and len(handed) == 1
    assert await history("sqlite:///x.db", "forgetful", "r1") == {}
    assert asked == [("sqlite:///x.db", "r1")]  # an agent without the hook reads nothing


def test_progress_lines_come_from_the_agent_that_sent_the_event(monkeypatch: pytest.MonkeyPatch) -> None:
    assert describe_event({"event": "run_started", "run_id": "abc", "resumed": True}) == "run id: abc (resumed)"
    step = {"event": "worker_step", "worker": "r1w2", "step": 0, "note": "saw it", "valid": False}
    assert describe_event(step) == "  r1w2 step 1: saw it [invalid]"
    assert describe_event({"event": "decide"}) == "final decision..."
    assert describe_event({"event": "glanced", "seconds": 3}) is None

    def glancer(event: dict[str, Any]) -> str | None:
        return f"glanced for {event['seconds']} s" if event.get("event") == "glanced" else None

    register(monkeypatch, "glancer", describe_event=glancer)
    assert describe_event({"event": "glanced", "seconds": 3}) == "glanced for 3 s"


def test_the_default_agent_is_the_run_configs() -> None:
    assert RunConfig.model_fields["agent"].default == registry.DEFAULT_AGENT
    assert registry.DEFAULT_AGENT in registry.PACKAGES


def _evidence(item: str) -> Evidence:
    return Evidence(
        id=item,
        time=1.0,
        start=0.0,
        end=2.0,
        description=item,
        confidence=0.5,
        frame=FrameRef(video="v", time=1.0, px=64),
        where={"tool": "looker"},
    )


def _decision_call(**extra: Any) -> decision.DecisionCall:
    return decision.DecisionCall(
        node="conclude",
        template="conclude",
        system="system",
        images=[],
        values={},
        choices=["red", "blue"],
        labels=["A", "B"],
        stop="done looking",
        step="verdict",
        thinker="judge",
        extra=extra,
    )


def without_decisions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The endpoint serves no ``/v1/decisions`` (the call below is text only): the read gives nothing, costs nothing."""

    async def no_route(*args: Any, **kwargs: Any) -> tuple[None, Cost]:
        return None, Cost()

    monkeypatch.setattr(decision, "read_choice", no_route)


async def test_a_failed_final_reply_is_recorded_never_guessed(monkeypatch: pytest.MonkeyPatch) -> None:
    async def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ModelReplyError("no usable reply")

    without_decisions(monkeypatch)
    monkeypatch.setattr(decision, "ask", refuse)
    kept = [_evidence("e1")]
    result = await decision.decide_final(None, _decision_call(round=3), decision.cite_labels({}), kept)  # type: ignore[arg-type]
    assert list(result) == [
        "answer", "answer_index", "declined", "reasoning", "cited", "probabilities", "confidence", "evidence", "cost",
        "stop_reason", "round",
    ]  # fmt: skip
    assert result["answer"] == "" and result["answer_index"] is None and result["cited"] == []
    assert result["probabilities"] is None and result["confidence"] is None  # no reply: no probability
    assert result["reasoning"] == "no valid verdict: no usable reply"
    assert result["stop_reason"] == "done looking; verdict failed"
    assert result["evidence"] is kept and result["round"] == 3
    assert result["cost"].failed_calls == 1


async def test_the_final_reply_cites_through_the_agents_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: dict[str, Any] = {}

    async def reply(ctx: Any, schema: Any, node: str, template: str, *args: Any, **kwargs: Any) -> Any:
        asked.update(node=node, template=template, thinker=kwargs["thinker"], logprobs=kwargs["logprobs"])
        value = types.SimpleNamespace(answer=1, reasoning="blue, as [B] shows", evidence=["[B]", "Z"])
        return types.SimpleNamespace(value=value, tokens=()), Cost(calls=1)  # a server that sent no logprobs

    without_decisions(monkeypatch)
    monkeypatch.setattr(decision, "ask", reply)
    items = {"A": _evidence("e1"), "B": _evidence("e2")}
    result = await decision.decide_final(None, _decision_call(), decision.cite_labels(items))  # type: ignore[arg-type]
    assert asked == {"node": "conclude", "template": "conclude", "thinker": "judge", "logprobs": True}
    assert result == {
        "answer": "blue",
        "answer_index": 1,
        "declined": False,
        "reasoning": "blue, as [B] shows",
        "cited": ["e2"],
        "probabilities": None,
        "confidence": None,
        "cost": Cost(calls=1),
        "stop_reason": "done looking",
    }

    def as_frames(cited: Sequence[str]) -> tuple[list[str], list[Evidence] | None]:
        return ["f1"], [_evidence("f1")]

    result = await decision.decide_final(None, _decision_call(), as_frames, [])  # type: ignore[arg-type]
    assert result["cited"] == ["f1"] and [e.id for e in result["evidence"]] == ["f1"]
