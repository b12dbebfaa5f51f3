"""The eval runner's scoring and result cache, with the question runner replaced by a scripted one.

No server and no video decoding: what is checked is what the runner makes of finished and failed
runs (a failed run is scored wrong and tried again) and when it re-uses a result (same key only).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from videoatlas.agents.base import Agent
from videoatlas.errors import EndpointError
from videoatlas.evals.items import EvalItem, write_items
from videoatlas.evals.report import load_eval, report
from videoatlas.evals.runner import EvalSpec, read_rows, run_eval
from videoatlas.llm.settings import EndpointSettings
from videoatlas.request import RunRequest
from videoatlas.runs import RunResult
from videoatlas.runtime.context import RunConfig
from videoatlas.state.models import Cost, Evidence, FrameRef

pytestmark = pytest.mark.unit


class ScriptedRuns:
    """Stands in for a question's run: answers by question text, failing the ones named in ``failing``."""

    def __init__(self, answers: dict[str, int | None], failing: set[str]) -> None:
        self.answers = answers
        self.failing = failing
        self.asked: list[str] = []

    async def __call__(self, video: str, question: str, choices: list[str], *args: Any, **kwargs: Any) -> RunResult:
        self.asked.append(question)
        if question in self.failing:
            raise EndpointError("the endpoint went away")
        index = self.answers[question]
        return RunResult(
            run_id=kwargs["run_id"],
            question=question,
            choices=choices,
            answer="" if index is None else choices[index],
            answer_index=index,
            reasoning="seen",
            evidence=[],
            cited=[],
            cost=Cost(calls=1, prompt_tokens=100, completion_tokens=10),
            rounds=0,
            stop_reason="single call",
            wall_s=0.1,
        )


def door(run: Callable[..., Awaitable[RunResult]]) -> Callable[..., Awaitable[RunResult]]:
    """The front door (:func:`videoatlas.request.answer`) with ``run`` in place of the run it would make."""

    async def answer(request: RunRequest, on_progress: Any = None, endpoint: Any = None) -> RunResult:
        return await run(request.video, request.question, list(request.choices), run_id=request.run_id)

    return answer


@pytest.fixture
def items_root(tmp_path: Path) -> Path:
    root = tmp_path / "set"
    items = [
        EvalItem("mine", f"q{n}", f"v{n}", f"v{n}.mp4", f"question {n}", ["a", "b"], 0, ["kind"], duration=60.0)
        for n in range(3)
    ]
    write_items(root / "items.jsonl", items)
    for n in range(3):
        (root / f"v{n}.mp4").write_bytes(b"never decoded: the runs are scripted")
    return root


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> ScriptedRuns:
    async def model(endpoint: EndpointSettings) -> str:
        return "scripted-model"

    # question 0 right, question 1 wrong, question 2's run fails
    scripted = ScriptedRuns({"question 0": 0, "question 1": 1, "question 2": 0}, failing={"question 2"})
    monkeypatch.setattr("videoatlas.evals.runner.resolve_model", model)
    monkeypatch.setattr("videoatlas.evals.answering.answer", door(scripted))
    return scripted


def _spec(root: Path, out: Path, agent: str = "uniform") -> EvalSpec:
    return EvalSpec("jsonl", str(root), str(out), RunConfig.of(agent=agent), concurrency=1)


ENDPOINT = EndpointSettings(base_url="http://127.0.0.1:9/v1", model="")


async def test_a_failed_run_is_scored_wrong_and_tried_again(
    items_root: Path, runs: ScriptedRuns, tmp_path: Path
) -> None:
    out = tmp_path / "ev"
    first = await run_eval(_spec(items_root, out), ENDPOINT)
    p = first.progress
    assert (p.done, p.scored, p.correct, p.errors) == (3, 3, 1, 1)
    assert p.accuracy == pytest.approx(1 / 3) and p.error_rate == pytest.approx(1 / 3)  # not 1/2 and 0
    [failed] = [r for r in read_rows(first.results_file) if r["status"] == "error"]
    # The failed row says where the question belongs, so reports count it in its categories.
    assert failed["truth_index"] == 0 and failed["categories"] == ["kind"] and failed["correct"] is False
    rep = report(load_eval(out))
    assert rep["overall"]["accuracy"] == pytest.approx(1 / 3) and rep["overall"]["error_rate"] == pytest.approx(1 / 3)
    assert rep["categories"]["kind"]["questions"] == 3 and rep["errors"] == 1

    # The failure was transient: only that question runs again, and it now counts once, as answered.
    runs.failing.clear()
    runs.asked.clear()
    second = await run_eval(_spec(items_root, out), ENDPOINT)
    assert runs.asked == ["question 2"]
    assert second.progress.cached == 2 and second.progress.errors == 0
    assert second.progress.accuracy == pytest.approx(2 / 3)
    data = load_eval(out)
    assert len(read_rows(second.results_file)) == 4 and len(data.rows) == 3 and not data.errors
    assert report(data)["overall"]["accuracy"] == pytest.approx(2 / 3)


async def test_changed_agent_code_reruns_and_the_same_code_reuses(
    items_root: Path, runs: ScriptedRuns, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs.failing.clear()
    out = tmp_path / "ev"
    first = await run_eval(_spec(items_root, out), ENDPOINT)
    code = json.loads((out / "eval.json").read_text())["agent_code"]
    assert first.progress.ran == 3 and len(code) == 16
    assert {r["agent_code"] for r in read_rows(first.results_file)} == {code}

    same = await run_eval(_spec(items_root, out), ENDPOINT)
    assert same.progress.ran == 0 and same.progress.cached == 3

    monkeypatch.setattr(Agent, "code_version", lambda self: "edited-node")
    runs.asked.clear()
    edited = await run_eval(_spec(items_root, out), ENDPOINT)
    assert edited.progress.ran == 3 and edited.progress.cached == 0
    assert sorted(runs.asked) == ["question 0", "question 1", "question 2"]
    meta = json.loads((out / "eval.json").read_text())
    assert meta["agent_code"] == "edited-node"
    assert {r["agent_code"] for r in load_eval(out).rows} == {"edited-node"}  # the older rows are not reported


@pytest.mark.parametrize("agent", ["video-rlm", "uniform"])
async def test_a_failed_final_call_is_scored_wrong_for_every_agent(
    items_root: Path, runs: ScriptedRuns, tmp_path: Path, agent: str
) -> None:
    # A finished run whose final call gave no valid answer (answer_index None): wrong, and a parse failure.
    runs.failing.clear()
    runs.answers["question 0"] = None
    outcome = await run_eval(_spec(items_root, tmp_path / agent, agent), ENDPOINT)
    p = outcome.progress
    assert (p.scored, p.correct, p.parse_failures, p.errors) == (3, 1, 1, 0)
    row = next(r for r in read_rows(outcome.results_file) if r["item"] == "q0")
    assert row["agent"] == agent and row["parse_failed"] and not row["correct"]


def _lvbench_root(tmp_path: Path) -> Path:
    """Two LVBench videos in a video2dataset shard, four questions of two types, one malformed record."""
    root = tmp_path / "LVBench"
    shard = root / "videos" / "00000"
    shard.mkdir(parents=True)
    lines = []
    for n, key in enumerate(("k0", "k1")):
        (shard / f"00000000{n}.mp4").write_bytes(b"never decoded: the runs are scripted")
        (shard / f"00000000{n}.json").write_text(json.dumps({"url": f"https://www.youtube.com/watch?v={key}"}))
        qa = [
            {
                "uid": f"{key}-{kind}",
                "question": f"{key} {kind}? (A) x (B) y",
                "answer": "A",
                "question_type": [kind],
                "time_reference": "00:10-00:20",
            }
            for kind in ("temporal grounding", "reasoning")
        ]
        lines.append({"key": key, "video_info": {"duration_minutes": 1}, "qa": qa})
    lines.append({"key": "k2", "qa": [{"uid": "bad", "question": "no options here", "answer": "A"}]})
    (root / "video_info.meta.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return root


async def test_a_subset_runs_only_its_questions_and_records_iou_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    async def cite(video: str, question: str, choices: list[str], *args: Any, **kwargs: Any) -> RunResult:
        asked.append(question)
        frame = FrameRef(video=video, time=12.0, px=64)
        found = Evidence(
            id="r1-w0-0", time=12.0, start=10.0, end=30.0, description="d", confidence=0.9, frame=frame,
            place="cell 3", where={"round": 1, "worker": "w0", "depth": 1, "cell": "3"},
        )  # fmt: skip
        return RunResult(
            run_id=kwargs["run_id"], question=question, choices=choices, answer="x", answer_index=0,
            reasoning="", evidence=[found], cited=["r1-w0-0"], cost=Cost(calls=1), rounds=1,
            stop_reason="answered", wall_s=0.1,
        )  # fmt: skip

    async def model(endpoint: EndpointSettings) -> str:
        return "scripted-model"

    monkeypatch.setattr("videoatlas.evals.runner.resolve_model", model)
    monkeypatch.setattr("videoatlas.evals.answering.answer", door(cite))
    out = tmp_path / "ev"
    spec = EvalSpec("lvbench", str(_lvbench_root(tmp_path)), str(out), RunConfig.of(agent="uniform"), subset=["TG"])
    outcome = await run_eval(spec, ENDPOINT)
    assert sorted(asked) == ["k0 temporal grounding?", "k1 temporal grounding?"]
    assert outcome.progress.total == 2
    meta = json.loads((out / "eval.json").read_text())
    assert meta["subset"] == ["TG"]
    [bad] = meta["skipped"]["malformed"]
    assert bad["record"] == "k2/bad" and "cannot find options" in bad["reason"]
    rows = read_rows(outcome.results_file)
    assert all(r["cited_ranges"] == [[10.0, 30.0]] for r in rows)
    assert all(r["evidence"] == 1 for r in rows)  # the run's evidence, counted in its row
    rep = report(load_eval(out))
    assert rep["overall"]["mean_iou"] == pytest.approx(0.5) and rep["skipped"]["malformed"] == 1
    assert list(rep["categories"]) == ["temporal grounding"]
