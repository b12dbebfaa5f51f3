"""The escalating agent with a scripted model: a sure uniform answer is kept, an unsure one is searched again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agent_helpers import ScriptedChat, answer_logprobs, default_reply, make_context
from videoatlas.agents.escalate.graph import build_escalate_graph
from videoatlas.agents.escalate.rule import hands_over
from videoatlas.agents.registry import get_agent, settings_of
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import BadInputError
from videoatlas.runtime.context import AgentContext, RunConfig

pytestmark = pytest.mark.e2e

BELOW = 0.7
CHOICES = ["one", "two", "three"]


class Script:
    """The uniform pass answers "one" citing cell 1/3; any later final decision (the search's) answers "two"."""

    def __init__(self, fail_probe: bool = False) -> None:
        self.decisions = 0
        self.fail_probe = fail_probe

    def __call__(self, name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "GlobalProbe" and self.fail_probe:
            raise RuntimeError("the machine went down")
        if name != "FinalDecision":
            return default_reply(name, text, schema)
        self.decisions += 1
        answer = 0 if self.decisions == 1 else 1
        return {"judgements": [], "answer": answer, "reasoning": "seen", "evidence": ["1/3"] if answer == 0 else []}


def _config(**settings: Any) -> RunConfig:
    return RunConfig.of(agent="escalate", k=4, cell_px=64, frames=16, escalate_below=BELOW, **settings)


async def _run(
    video: Path, tmp: Path, script: Script, sure: float | None, saver: InMemorySaver | None = None
) -> tuple[dict[str, Any], ScriptedChat, AgentContext]:
    ctx, chat, source = make_context(video, tmp, script, _config())
    if sure is not None:
        chat.logprobs = answer_logprobs({"0": sure, "1": 1 - sure})
    try:
        out = await build_escalate_graph(saver or InMemorySaver()).ainvoke(
            {"question": "What number is shown?", "choices": CHOICES},
            {"configurable": {"thread_id": "e"}, "recursion_limit": 500},
            context=ctx,
        )
    finally:
        source.close()
    return out, chat, ctx


@pytest.mark.unit
def test_the_rule_keeps_an_answer_at_the_threshold_and_hands_over_below_or_without_a_probability() -> None:
    assert not hands_over(0.7, 0.7) and not hands_over(0.71, 0.7)
    assert hands_over(0.69, 0.7) and hands_over(None, 0.7)


async def test_a_sure_uniform_answer_is_kept_after_one_call(counter_video: Path, tmp_path: Path) -> None:
    out, chat, _ = await _run(counter_video, tmp_path, Script(), BELOW + 0.01)
    assert [name for name, _ in chat.seen] == ["FinalDecision"]  # the uniform call, nothing else
    assert out["answer"] == "one" and out["answer_index"] == 0
    assert out["confidence"] == pytest.approx(0.71) and out["uniform_confidence"] == pytest.approx(0.71)
    assert out["escalated"] is False and out["search_agent"] == "" and out["search_cost"] is None
    assert out["cost"].calls == 1 and out["uniform_cost"] == out["cost"]
    extras = get_agent("escalate").views.result_extras(out)
    assert extras["escalated"] is False and extras["uniform_answer"] == "one"
    assert extras["path_costs"]["uniform"]["calls"] == 1 and extras["path_costs"]["search"] is None


async def test_an_unsure_uniform_answer_goes_to_the_search_agent_with_its_moments(
    counter_video: Path, tmp_path: Path
) -> None:
    out, chat, _ = await _run(counter_video, tmp_path, Script(), BELOW - 0.01)
    names = [name for name, _ in chat.seen]
    assert names[0] == "FinalDecision" and "SearchTask" in names and names[-1] == "FinalDecision"
    # The search agent's answer is the run's, with its own probability; the uniform one is kept beside it.
    assert out["answer"] == "two" and out["answer_index"] == 1 and out["confidence"] == pytest.approx(0.31)
    assert out["escalated"] is True and out["search_agent"] == "video-rlm"
    assert out["uniform_answer"] == "one" and out["uniform_confidence"] == pytest.approx(0.69)
    # What the uniform pass cited (16 frames, K=4: one sheet over the 80 s video, cell 3 spans 15-20 s) is in the
    # question every search prompt shows; the uniform answer itself is not.
    (cell,) = out["uniform_evidence"]
    assert (cell.start, cell.end) == (pytest.approx(15.0), pytest.approx(20.0))
    moment = f"{format_ts(cell.time, 1)} (within 00:15.0-00:20.0)"
    search_prompt = next(text for name, text in chat.seen if name == "SearchTask")
    assert moment in search_prompt and "16 evenly spaced frames" in search_prompt
    assert '"one"' not in search_prompt.split("What number is shown?")[1]
    # The run's cost adds both paths: one uniform call, every other call the search's.
    assert out["uniform_cost"].calls == 1
    assert out["search_cost"].calls == len(names) - 1 and out["cost"].calls == len(names)
    assert out["cost"].tokens == out["uniform_cost"].tokens + out["search_cost"].tokens
    extras = get_agent("escalate").views.result_extras(out)
    assert extras["escalated"] is True and extras["search_agent"] == "video-rlm"
    assert extras["path_costs"]["search"]["calls"] == len(names) - 1
    assert extras["search_task"] == "look for the thing"  # the search agent's own extras come along


async def test_an_answer_without_probabilities_is_handed_over(counter_video: Path, tmp_path: Path) -> None:
    out, chat, _ = await _run(counter_video, tmp_path, Script(), None)
    assert out["uniform_confidence"] is None and out["escalated"] is True
    assert out["answer"] == "two" and len(chat.seen) > 1


async def test_a_run_stopped_in_the_search_resumes_there_without_asking_the_uniform_pass_again(
    counter_video: Path, tmp_path: Path
) -> None:
    saver, script = InMemorySaver(), Script(fail_probe=True)
    with pytest.raises(RuntimeError, match="went down"):
        await _run(counter_video, tmp_path, script, 0.5, saver)
    assert script.decisions == 1
    script.fail_probe = False
    ctx, chat, source = make_context(counter_video, tmp_path, script, _config())
    chat.logprobs = answer_logprobs({"0": 0.5, "1": 0.5})
    try:
        out = await build_escalate_graph(saver).ainvoke(
            None, {"configurable": {"thread_id": "e"}, "recursion_limit": 500}, context=ctx
        )
    finally:
        source.close()
    names = [name for name, _ in chat.seen]
    assert "SearchTask" not in names and names[0] == "GlobalProbe"  # the search went on where it stopped
    assert script.decisions == 2 and out["answer"] == "two" and out["uniform_answer"] == "one"
    assert out["uniform_cost"].calls == 1 and out["cost"].calls == 1 + out["search_cost"].calls


@pytest.mark.unit
def test_a_search_agent_must_be_another_registered_agent() -> None:
    assert settings_of(_config(escalate_to="videoseek")).escalate_to == "videoseek"  # type: ignore[attr-defined]
    for bad in ("escalate", "nope"):
        with pytest.raises(BadInputError, match="escalate_to"):
            settings_of(_config(escalate_to=bad))


@pytest.mark.unit
def test_the_eval_report_shows_the_share_escalated_and_each_paths_mean_cost() -> None:
    from videoatlas.evals.report import escalation, escalation_lines

    def row(escalated: bool, uniform: int, search: int | None) -> dict[str, Any]:
        paths = {"uniform": {"calls": 1, "tokens": uniform}}
        if search is not None:
            paths["search"] = {"calls": 5, "tokens": search}
        total = uniform + (search or 0)
        calls = 1 + (5 if search is not None else 0)
        return {"status": "ok", "escalated": escalated, "path_costs": paths, "calls": calls, "tokens": total}

    rows = [row(False, 100, None), row(False, 300, None), row(True, 200, 1000), row(True, 200, 3000)]
    rows.append({"status": "error", "escalated": None})  # a failed run took no path
    esc = escalation(rows)
    assert esc is not None
    assert (esc["questions"], esc["escalated"], esc["escalated_rate"]) == (4, 2, 0.5)
    assert esc["uniform_pass"] == {"calls": 1.0, "tokens": 200.0}
    assert esc["search_pass"] == {"calls": 5.0, "tokens": 2000.0}
    assert esc["kept_route"] == {"calls": 1.0, "tokens": 200.0}
    assert esc["escalated_route"] == {"calls": 6.0, "tokens": 2200.0}
    assert "| search pass | 2 | 5.0 | 2,000 |" in escalation_lines(esc)
    assert escalation([{"status": "ok", "escalated": None}]) is None and escalation_lines(None) == []


@pytest.mark.unit
def test_every_other_registered_agent_can_be_handed_over_to() -> None:
    from videoatlas.agents.escalate.passes import AGENTS
    from videoatlas.agents.escalate.settings import SEARCH_SETTINGS
    from videoatlas.agents.registry import agent_names, settings_model

    others = set(agent_names()) - {"escalate"}
    assert set(AGENTS) == set(SEARCH_SETTINGS) == others
    assert all(SEARCH_SETTINGS[name] is settings_model(name) is AGENTS[name].settings for name in others)
