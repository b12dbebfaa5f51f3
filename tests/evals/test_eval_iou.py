"""Temporal IoU between cited and annotated intervals, and where the report shows it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from videoatlas.cli.main import main
from videoatlas.evals.iou import merge, row_iou, temporal_iou
from videoatlas.evals.report import summarize

pytestmark = pytest.mark.unit


def test_merge_joins_overlaps_and_drops_empty_intervals() -> None:
    assert merge([[5, 8], [0, 2], [1, 3], [7, 9], [4, 4], [6, 5]]) == [(0.0, 3.0), (5.0, 9.0)]


@pytest.mark.parametrize(
    ("predicted", "truth", "expected"),
    [
        ([[0, 10]], [[0, 10]], 1.0),
        ([[0, 10]], [[5, 15]], 5 / 15),
        ([[0, 10]], [[20, 30]], 0.0),
        ([[0, 4], [6, 10]], [[0, 10]], 8 / 10),  # two cited cells inside one range
        ([[0, 5], [0, 5]], [[0, 10]], 0.5),  # a cell cited twice counts once
        ([[2, 3]], [[0, 1], [2, 3], [4, 5]], 1 / 3),  # several annotated ranges
        ([], [[0, 10]], 0.0),
    ],
)
def test_temporal_iou(predicted: list[list[float]], truth: list[list[float]], expected: float) -> None:
    assert temporal_iou(predicted, truth) == pytest.approx(expected)


def test_row_iou_scores_failures_zero_and_unknowns_none() -> None:
    truth = [[10.0, 20.0]]
    assert row_iou({"status": "ok", "truth_ranges": truth, "cited_ranges": [[10.0, 30.0]]}) == pytest.approx(0.5)
    assert row_iou({"status": "ok", "truth_ranges": truth, "cited_ranges": []}) == 0.0
    assert row_iou({"status": "error", "truth_ranges": truth}) == 0.0
    assert row_iou({"status": "ok", "truth_ranges": [], "cited_ranges": [[0.0, 1.0]]}) is None
    assert row_iou({"status": "ok", "truth_ranges": truth, "cited_times": [12.0]}) is None  # before ranges were kept


def _row(item: str, cat: str, cited: list[list[float]], truth: list[list[float]]) -> dict[str, Any]:
    return {
        "status": "ok",
        "key": f"k-{item}",
        "item": item,
        "video_id": "v",
        "categories": [cat],
        "groups": {},
        "duration": 60.0,
        "truth_index": 0,
        "truth_ranges": truth,
        "answer_index": 0,
        "correct": True,
        "parse_failed": False,
        "calls": 1,
        "tokens": 10,
        "prompt_tokens": 9,
        "cached_tokens": 0,
        "master_tokens": 5,
        "worker_tokens": 5,
        "wall_s": 1.0,
        "rounds": 1,
        "evidence": 1,
        "evidence_times": [],
        "cited_times": [],
        "cited_ranges": cited,
    }


def test_summary_means_iou_over_questions_with_ranges() -> None:
    rows = [_row("a", "TG", [[0, 10]], [[0, 10]]), _row("b", "TG", [[0, 10]], [[5, 15]]), _row("c", "X", [], [])]
    s = summarize(rows)
    assert s["mean_iou"] == pytest.approx((1 + 1 / 3) / 2) and s["iou_questions"] == 2
    assert summarize(rows[2:])["mean_iou"] is None


def test_eval_report_shows_iou_per_question_type_with_subset_and_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [_row("a", "TG", [[0, 10]], [[0, 10]]), _row("b", "KIR", [[0, 10]], [[5, 15]])]
    meta = {
        "dataset": "lvbench",
        "agent": "video-rlm",
        "agent_code": "c",
        "prompt_set": "default",
        "prompt_sha": "p",
        "model": "m",
        "results": "results.jsonl",
        "keys": {r["item"]: r["key"] for r in rows},
        "subset": ["KIR", "TG"],
        "skipped": {"malformed": [{"file": "f", "record": "r", "reason": "bad", "malformed": True}], "excluded": {}},
    }
    (tmp_path / "eval.json").write_text(json.dumps(meta))
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["eval", "report", str(tmp_path), "--json", "--plot", str(tmp_path / "p.png")]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["categories"]["TG"]["mean_iou"] == pytest.approx(1.0)
    assert rep["categories"]["KIR"]["mean_iou"] == pytest.approx(1 / 3)
    assert rep["subset"] == ["KIR", "TG"] and rep["skipped"]["malformed"] == 1
    assert main(["eval", "report", str(tmp_path), "--plot", str(tmp_path / "p.png")]) == 0
    text = capsys.readouterr().out
    assert "| IoU |" in text and "| 0.33 |" in text
    assert "subset: KIR, TG" in text and "1 malformed" in text


def test_the_ui_eval_page_shows_iou_per_category(tmp_path: Path) -> None:
    from videoatlas.evals.report import load_eval
    from videoatlas.ui import evals as ui_evals
    from videoatlas.ui.render import render

    rows = [_row("a", "TG", [[0, 10]], [[0, 10]]), _row("b", "KIR", [[0, 10]], [[5, 15]])]
    meta: dict[str, Any] = {"dataset": "lvbench", "agent": "video-rlm", "prompt_set": "d", "prompt_sha": "p"}
    meta |= {"model": "m"}
    meta |= {"results": "results.jsonl", "keys": {r["item"]: r["key"] for r in rows}}
    (tmp_path / "eval.json").write_text(json.dumps(meta))
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = load_eval(tmp_path)
    page = render(
        "eval.html", index=0, name="x", rep=ui_evals.report_of(data), questions=ui_evals.question_rows(data, {})
    )
    assert '<span id="iou">0.67</span>' in page
    assert "<td>KIR</td>" in page and '<td class="num">0.33</td>' in page


_META = {"agent": "video-rlm", "prompt_set": "default"}


def test_compare_puts_both_sides_iou_beside_accuracy(tmp_path: Path) -> None:
    from videoatlas.evals.compare import compare, render_comparison
    from videoatlas.evals.report import EvalData

    a = EvalData(tmp_path / "a", [_META], [_row("q", "TG", [[0, 10]], [[0, 10]]), _row("r", "TG", [], [[0, 10]])], 0)
    b = EvalData(
        tmp_path / "b", [_META], [_row("q", "TG", [[0, 20]], [[0, 10]]), _row("r", "TG", [[0, 5]], [[0, 10]])], 0
    )
    cmp = compare(a, b, resamples=100)
    assert cmp["overall"]["iou_a"] == pytest.approx(0.5) and cmp["overall"]["iou_b"] == pytest.approx(0.5)
    assert cmp["categories"]["TG"]["iou_b"] == pytest.approx(0.5)
    assert "| IoU A | IoU B |" in render_comparison(cmp) and "| 0.50 | 0.50 |" in render_comparison(cmp)
