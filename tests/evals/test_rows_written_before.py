"""Eval result rows written before tokens by role (schema 4) still report and compare, beside rows written now.

``tests/fixtures/e9ceea9/eval-rlm`` and ``eval-uniform`` hold the rows the code of commit e9ceea9 wrote for one
finished run each (with ``master_tokens`` and ``worker_tokens``) and one failed run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from videoatlas.evals.compare import compare, render_comparison
from videoatlas.evals.items import EvalItem
from videoatlas.evals.report import load_eval, render_markdown, report, summarize
from videoatlas.evals.results import RESULT_SCHEMA, read_rows, result_row, row_tokens_by_role
from videoatlas.runs import RunResult
from videoatlas.state.models import Cost, Evidence, FrameRef

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).parents[1] / "fixtures" / "e9ceea9"


def old_rows(name: str) -> list[dict[str, Any]]:
    return read_rows(FIXTURES / name / "results.jsonl")


def new_row(item: str, key: str) -> dict[str, Any]:
    """A finished run's row as today's code writes it: a VideoSeek-like run with its own roles."""
    question = EvalItem("synthetic", item, "v1", "v.mp4", "What number?", ["zero", "one"], 1, ["counting"])
    found = Evidence(
        id="t1-0", time=2.0, start=1.0, end=3.0, description="a one", confidence=0.9,
        frame=FrameRef(video="v", time=2.0, px=64), place="turn 1, focus", where={"turn": 1, "tool": "focus"},
    )  # fmt: skip
    result = RunResult(
        run_id="new", question="What number?", choices=["zero", "one"], answer="one", answer_index=1,
        reasoning="seen", evidence=[found], cited=["t1-0"], rounds=1, stop_reason="answered", wall_s=1.0,
        cost=Cost(calls=3, prompt_tokens=900, completion_tokens=100, tokens_by_role={"planner": 700, "looker": 300}),
    )  # fmt: skip
    return result_row(question, key, {"agent": "videoseek"}, result, 30.0, "run")


def test_an_old_row_reads_as_the_two_roles_it_had() -> None:
    rlm, failed = old_rows("eval-rlm")
    assert rlm["schema"] == 4 and "tokens_by_role" not in rlm
    assert row_tokens_by_role(rlm) == {"master": 5100, "worker": 2920}
    assert row_tokens_by_role(old_rows("eval-uniform")[0]) == {"master": 1020}  # its worker spent nothing
    assert row_tokens_by_role(failed) == {}


def test_a_new_row_carries_its_agents_roles() -> None:
    row = new_row("q1", "k")
    assert row["schema"] == RESULT_SCHEMA == 7
    assert (row["probabilities"], row["confidence"]) == (None, None)  # a result the server gave no logprobs for
    assert (row["escalated"], row["path_costs"]) == (None, {})  # an agent that does not escalate
    assert row["tokens_by_role"] == {"looker": 300, "planner": 700} and row["tokens"] == 1000
    assert "master_tokens" not in row and "worker_tokens" not in row
    assert row_tokens_by_role(json.loads(json.dumps(row))) == {"looker": 300, "planner": 700}


def test_old_and_new_rows_average_role_by_role() -> None:
    rows = [old_rows("eval-rlm")[0], new_row("q2", "k")]
    assert summarize(rows)["mean_tokens_by_role"] == {"looker": 150, "master": 2550, "planner": 350, "worker": 1460}


def test_an_old_eval_reports(tmp_path: Path) -> None:
    folder = shutil.copytree(FIXTURES / "eval-rlm", tmp_path / "eval-rlm")
    rep = report(load_eval(folder))
    overall = rep["overall"]
    assert (overall["questions"], overall["answered"], overall["failed"], overall["accuracy"]) == (2, 1, 1, 0.5)
    assert overall["mean_tokens"] == 8020
    assert overall["mean_tokens_by_role"] == {"master": 5100, "worker": 2920}
    text = render_markdown(rep)
    assert "| mean tokens (by role) |" in text and "| 8,020 (master 5,100, worker 2,920) |" in text


def test_an_old_eval_compares_with_one_written_now(tmp_path: Path) -> None:
    old = shutil.copytree(FIXTURES / "eval-rlm", tmp_path / "old")
    new = shutil.copytree(FIXTURES / "eval-rlm", tmp_path / "new")
    keys = json.loads((new / "eval.json").read_text())["keys"]
    rows = [new_row(item, key) for item, key in sorted(keys.items())]
    (new / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cmp = compare(load_eval(old), load_eval(new), resamples=50)
    overall = cmp["overall"]
    assert (overall["questions"], overall["accuracy_a"], overall["accuracy_b"]) == (2, 0.5, 1.0)
    assert (overall["tokens_a"], overall["tokens_b"]) == (8020, 1000)
    assert "8,020" in render_comparison(cmp)
    assert report(load_eval(new))["overall"]["mean_tokens_by_role"] == {"looker": 300, "planner": 700}
