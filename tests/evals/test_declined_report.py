"""A declined open answer in an eval: its row, the report's counts, the comparison, the eval page's word for it.

A declined question (the final decision found no answer) is unanswered: never right, not a parse
failure, not an answer given without evidence, and counted apart. Rows written before the field
existed read as not declined.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from videoatlas.cli.main import main
from videoatlas.evals.compare import compare, render_comparison
from videoatlas.evals.items import EvalItem
from videoatlas.evals.kinds import kinds_by_agent, render_kinds
from videoatlas.evals.progress import EvalProgress
from videoatlas.evals.report import load_eval, render_markdown, report, summarize
from videoatlas.evals.results import result_row
from videoatlas.evals.scoring import is_correct
from videoatlas.runs.result import RunResult
from videoatlas.state.models import Cost
from videoatlas.ui.evals import result_text

pytestmark = pytest.mark.unit


def _item(**kw: Any) -> EvalItem:
    base: dict[str, Any] = {
        "dataset": "d",
        "id": "q",
        "video_id": "v",
        "video": "v.mp4",
        "question": "Which code is shown?",
        "choices": [],
        "answer_index": None,
        "answer_text": "QU-8424",
    }
    return EvalItem(**{**base, **kw})


def _result(answer: str, declined: bool = False, answer_index: int | None = None) -> RunResult:
    return RunResult(
        run_id="r", question="Which code is shown?", choices=[], answer=answer, answer_index=answer_index,
        reasoning="", evidence=[], cited=[], cost=Cost(calls=1), rounds=1, stop_reason="done", wall_s=1.0,
        declined=declined,
    )  # fmt: skip


def test_a_declined_run_is_written_unanswered_not_a_parse_failure() -> None:
    declined = result_row(_item(), "k", {}, _result("", declined=True), 60.0, "run")
    assert (declined["declined"], declined["correct"], declined["parse_failed"]) == (True, False, False)
    answered = result_row(_item(), "k", {}, _result("QU-8424"), 60.0, "run")
    assert (answered["declined"], answered["correct"], answered["parse_failed"]) == (False, True, False)
    empty = result_row(_item(), "k", {}, _result(""), 60.0, "run")  # an empty reply that did not decline
    assert (empty["declined"], empty["correct"], empty["parse_failed"]) == (False, False, True)
    choice = result_row(_item(choices=["a", "b"], answer_index=1), "k", {}, _result("b", answer_index=1), 60.0, "run")
    assert (choice["declined"], choice["correct"]) == (False, True)


def _row(item: str, video: str, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "status": "ok",
        "key": f"k-{item}",
        "item": item,
        "video_id": video,
        "categories": ["reading"],
        "groups": {},
        "duration": 600.0,
        "truth_index": None,
        "truth_text": "QU-8424",
        "truth_ranges": [],
        "answer": "QU-8424",
        "answer_index": None,
        "declined": False,
        "correct": True,
        "parse_failed": False,
        "grounded": True,
        "calls": 3,
        "tokens": 1000,
        "prompt_tokens": 900,
        "cached_tokens": 300,
        "master_tokens": 400,
        "worker_tokens": 600,
        "wall_s": 2.0,
        "rounds": 1,
        "evidence": 2,
        "evidence_times": [],
        "cited_times": [],
    }
    row.update(extra)
    return row


DECLINED = {"answer": "", "declined": True, "correct": False, "grounded": False}
WRONG_WITHOUT_EVIDENCE = {"answer": "QU-8000", "correct": False, "grounded": False}


def _folder(path: Path, rows: list[dict[str, Any]], agent: str = "videoseek") -> Path:
    path.mkdir(parents=True)
    meta = {
        "dataset": "synthetic",
        "agent": agent,
        "prompt_set": "default",
        "prompt_sha": "abc",
        "model": "m",
        "results": "results.jsonl",
        "keys": {r["item"]: r["key"] for r in rows},
    }
    (path / "eval.json").write_text(json.dumps(meta))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _rows() -> list[dict[str, Any]]:
    """One right, two declined, one wrong without evidence, one row from before ``declined`` was written."""
    old = _row("q5", "v5")
    del old["declined"]
    return [
        _row("q1", "v1"),
        _row("q2", "v2", **DECLINED),
        _row("q3", "v3", **DECLINED),
        _row("q4", "v4", **WRONG_WITHOUT_EVIDENCE),
        old,
    ]


def test_the_report_counts_declined_questions_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path / "ev", _rows())
    data = load_eval(folder)
    overall = report(data)["overall"]
    assert overall["declined"] == 2 and overall["declined_rate"] == pytest.approx(2 / 5)
    assert overall["accuracy"] == pytest.approx(2 / 5)  # the old row is right, the declined ones never are
    assert overall["parse_failure_rate"] == 0.0  # declining is not a reply that failed to parse
    assert overall["without_evidence_rate"] == pytest.approx(1 / 5)  # only the wrong answer, not the unanswered
    assert [is_correct(r) for r in data.rows] == [True, False, False, False, True]
    text = render_markdown(report(data))
    assert "of those answered, 2 left unanswered (the model found no answer and declined)" in text
    assert "| parse fail | unanswered (declined) | no evidence |" in text
    assert "| all | 5 | 40.0% | 0.0% | 0.0% | 2 (40.0%) | 20.0% |" in text
    assert main(["eval", "report", str(folder)]) == 0
    assert "| all | 5 | 40.0% | 0.0% | 0.0% | 2 (40.0%) | 20.0% |" in capsys.readouterr().out
    kinds = render_kinds(kinds_by_agent([data]))
    assert kinds.splitlines()[2].endswith("| IoU | unanswered |") and kinds.splitlines()[4].endswith(" | 2 |")


def test_a_declined_row_even_marked_correct_is_never_right() -> None:
    row = _row("q1", "v1", declined=True, correct=True)
    assert not is_correct(row)
    assert summarize([row])["accuracy"] == 0.0 and summarize([row])["declined"] == 1


def test_compare_says_how_many_each_side_left_unanswered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _folder(tmp_path / "a", _rows())
    b = _folder(tmp_path / "b", [_row(f"q{i}", f"v{i}") for i in range(1, 6)], agent="uniform")
    cmp = compare(load_eval(a), load_eval(b), resamples=200)
    overall = cmp["overall"]
    assert (overall["declined_a"], overall["declined_b"]) == (2, 0)
    assert overall["accuracy_a"] == pytest.approx(2 / 5) and overall["accuracy_b"] == 1.0
    text = render_comparison(cmp)
    assert "| 95% CI | unanswered A | unanswered B | IoU A |" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("| overall |"))
    assert "(too few) | 2 | 0 | -" in line
    assert main(["eval", "compare", str(a), str(b)]) == 0
    assert "(too few) | 2 | 0 | -" in capsys.readouterr().out


def test_the_eval_page_and_progress_call_a_declined_question_unanswered() -> None:
    assert result_text(_row("q2", "v2", **DECLINED)) == "unanswered (the model declined)"
    assert result_text(_row("q4", "v4", **WRONG_WITHOUT_EVIDENCE)) == "wrong"
    progress = EvalProgress(total=5)
    for row in _rows():
        progress.add(row)
    assert (progress.correct, progress.declined, progress.parse_failures, progress.scored) == (2, 2, 0, 5)
