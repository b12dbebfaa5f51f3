"""Reports and comparisons over result folders written the way the runner writes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from videoatlas.cli.main import main
from videoatlas.errors import BadInputError
from videoatlas.evals.compare import compare, paired_bootstrap
from videoatlas.evals.plot import plot_tokens_vs_duration
from videoatlas.evals.report import by_category, grounding_hit, load_eval, report, summarize

pytestmark = pytest.mark.unit


def _row(item: str, video: str, correct: bool, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "status": "ok",
        "key": f"k-{item}",
        "item": item,
        "video_id": video,
        "categories": ["needle"],
        "groups": {"duration": "1h"},
        "duration": 3600.0,
        "truth_index": 0,
        "truth_ranges": [],
        "answer_index": 0 if correct else 1,
        "correct": correct,
        "parse_failed": False,
        "calls": 3,
        "tokens": 1000,
        "prompt_tokens": 900,
        "cached_tokens": 300,
        "tokens_by_role": {"master": 400, "worker": 600},
        "wall_s": 2.0,
        "rounds": 1,
        "evidence": 2,
        "evidence_times": [],
        "cited_times": [],
    }
    row.update(extra)
    return row


QUESTION_KEYS = ("key", "item", "video_id", "categories", "groups", "duration", "truth_index", "truth_ranges")


def _error(item: str, video: str, **extra: Any) -> dict[str, Any]:
    """A failed run's row as the runner writes it: the question's truth and categories, no answer."""
    row = {k: v for k, v in _row(item, video, False).items() if k in QUESTION_KEYS}
    row.update(status="error", answer_index=None, correct=False, parse_failed=False, error="EndpointError: down")
    row.update(extra)
    return row


def _folder(path: Path, rows: list[dict[str, Any]], keys: dict[str, str] | None = None, **meta: Any) -> Path:
    path.mkdir(parents=True)
    info = {
        "dataset": "synthetic",
        "agent": "video-rlm",
        "prompt_set": "default",
        "prompt_sha": "abc",
        "model": "m",
        "results": "results.jsonl",
        "keys": keys if keys is not None else {r["item"]: r["key"] for r in rows},
        **meta,
    }
    (path / "eval.json").write_text(json.dumps(info))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_summary_counts_parse_failures_as_wrong_and_reports_costs() -> None:
    rows = [_row("a", "v1", True), _row("b", "v1", False, parse_failed=True, answer_index=None)]
    s = summarize(rows)
    assert s["accuracy"] == 0.5 and s["parse_failure_rate"] == 0.5
    assert s["cache_hit_rate"] == pytest.approx(300 / 900)
    assert s["mean_tokens_by_role"] == {"master": 400, "worker": 600}
    assert s["grounding_hit_rate"] is None


def test_a_question_counts_in_each_of_its_categories() -> None:
    rows = [_row("a", "v1", True, categories=["ER", "TG"]), _row("b", "v2", False, categories=["TG"])]
    cats = by_category(rows)
    assert {k: len(v) for k, v in cats.items()} == {"ER": 1, "TG": 2}
    assert summarize(cats["TG"])["accuracy"] == 0.5


def test_grounding_uses_cited_frames_then_all_evidence() -> None:
    assert grounding_hit(_row("a", "v", True, truth_ranges=[[10, 20]], cited_times=[20.5])) is True
    assert grounding_hit(_row("a", "v", True, truth_ranges=[[10, 20]], cited_times=[30.0])) is False
    assert grounding_hit(_row("a", "v", True, truth_ranges=[[10, 20]], evidence_times=[15.0])) is True
    assert grounding_hit(_row("a", "v", True)) is None


def test_paired_bootstrap_resamples_videos() -> None:
    mean, low, high = paired_bootstrap([("v1", 0.0), ("v2", 0.0)])
    assert (mean, low, high) == (0.0, 0.0, 0.0)
    # One video always improves (+1 on 3 questions), one never changes: the CI spans 0 .. +1.
    pairs = [("v1", 1.0)] * 3 + [("v2", 0.0)] * 3
    mean, low, high = paired_bootstrap(pairs, resamples=4000, seed=1)
    assert mean == pytest.approx(0.5)
    assert low == pytest.approx(0.0) and high == pytest.approx(1.0)
    # Questions resampled one by one would give a much narrower interval; clustered it stays wide.
    many = [(f"q{i}", 1.0 if i < 3 else 0.0) for i in range(6)]
    _, low_q, high_q = paired_bootstrap(many, resamples=4000, seed=1)
    assert high_q - low_q < high - low
    with pytest.raises(BadInputError):
        paired_bootstrap([])


def test_report_keeps_only_current_results(tmp_path: Path) -> None:
    rows = [
        _row("a", "v1", False, key="old-a"),  # an earlier prompt version: superseded
        _row("a", "v1", True),
        # a failed run as written before result schema 2 (no truth recorded): still counted wrong
        {"status": "error", "key": "k-b", "item": "b", "video_id": "v1", "error": "EndpointError: down"},
    ]
    folder = _folder(tmp_path / "ev", rows, keys={"a": "k-a", "b": "k-b", "c": "k-c"})
    data = load_eval(folder)
    assert [r["item"] for r in data.answered] == ["a"] and len(data.errors) == 1 and data.pending == 1
    rep = report(data)
    assert rep["overall"]["accuracy"] == 0.5 and rep["overall"]["error_rate"] == 0.5
    assert rep["errors"] == 1 and rep["pending"] == 1


def test_a_failed_run_counts_as_a_wrong_answer_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [_row("a", "v1", True), _row("b", "v2", False), _error("c", "v3")]
    folder = _folder(tmp_path / "ev", rows)
    rep = report(load_eval(folder))
    overall = rep["overall"]
    assert overall["accuracy"] == pytest.approx(1 / 3)  # not 1/2: the failed run is in the denominator
    assert overall["error_rate"] == pytest.approx(1 / 3) and overall["parse_failure_rate"] == 0.0
    assert (overall["questions"], overall["answered"], overall["failed"]) == (3, 2, 1)
    assert overall["mean_tokens"] == 1000  # costs are over the runs that finished
    assert rep["categories"]["needle"]["accuracy"] == pytest.approx(1 / 3)
    assert rep["groups"]["duration"]["1h"]["error_rate"] == pytest.approx(1 / 3)
    assert main(["eval", "report", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "| errors |" in out and "| all | 3 | 33.3% | 33.3% | 0.0% |" in out
    assert "2 answered, 1 failed to run" in out


def test_the_latest_row_of_a_question_wins(tmp_path: Path) -> None:
    rows = [_error("a", "v1"), _row("a", "v1", True), _row("b", "v2", True), _error("c", "v3"), _error("c", "v3")]
    data = load_eval(_folder(tmp_path / "ev", rows, keys={"a": "k-a", "b": "k-b", "c": "k-c"}))
    assert sorted(r["item"] for r in data.rows) == ["a", "b", "c"]
    assert [r["item"] for r in data.errors] == ["c"]
    assert summarize(data.rows)["accuracy"] == pytest.approx(2 / 3)


def test_parse_failures_and_failed_runs_are_both_wrong() -> None:
    rows = [_row("a", "v1", True), _row("b", "v1", False, parse_failed=True, answer_index=None), _error("c", "v2")]
    s = summarize(rows)
    assert s["accuracy"] == pytest.approx(1 / 3)
    assert s["parse_failure_rate"] == pytest.approx(1 / 3) and s["error_rate"] == pytest.approx(1 / 3)


def test_compare_pairs_by_question(tmp_path: Path) -> None:
    a = _folder(tmp_path / "a", [_row("q1", "v1", False), _row("q2", "v2", True), _row("q3", "v3", True)])
    b = _folder(
        tmp_path / "b",
        [_row("q1", "v1", True), _row("q2", "v2", True), _row("q4", "v4", True)],
        agent="uniform",
    )
    cmp = compare(load_eval(a), load_eval(b), resamples=500)
    assert cmp["overall"]["questions"] == 2 and cmp["only_a"] == 1 and cmp["only_b"] == 1
    assert cmp["overall"]["accuracy_a"] == 0.5 and cmp["overall"]["accuracy_b"] == 1.0
    assert cmp["overall"]["difference"] == pytest.approx(0.5)
    assert cmp["overall"]["ci_low"] <= 0.5 <= cmp["overall"]["ci_high"]


def test_compare_counts_a_failed_run_as_wrong_on_its_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _folder(tmp_path / "a", [_error("q1", "v1"), _row("q2", "v2", True), _row("q3", "v3", False)])
    b = _folder(tmp_path / "b", [_row("q1", "v1", True), _row("q2", "v2", True), _error("q3", "v3")])
    cmp = compare(load_eval(a), load_eval(b), resamples=500)
    overall = cmp["overall"]
    assert overall["questions"] == 3 and cmp["only_a"] == 0 and cmp["only_b"] == 0
    assert overall["accuracy_a"] == pytest.approx(1 / 3) and overall["accuracy_b"] == pytest.approx(2 / 3)
    assert overall["error_rate_a"] == pytest.approx(1 / 3) and overall["error_rate_b"] == pytest.approx(1 / 3)
    assert overall["difference"] == pytest.approx(1 / 3)
    assert overall["tokens_a"] == 1000 and overall["tokens_b"] == 1000
    assert main(["eval", "compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "| errors A | errors B |" in out and "| overall | 3 | 3 | 33.3% | 66.7% | 33.3% | 33.3% | +33.3% |" in out


def test_compare_says_when_its_interval_rests_on_too_few_questions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    few = [_row(f"q{i}", f"v{i}", i % 2 == 0) for i in range(3)]
    many = [_row(f"q{i}", f"v{i}", i % 2 == 0) for i in range(12)]
    for name, rows, warned in (("few", few, True), ("many", many, False)):
        a, b = _folder(tmp_path / name / "a", rows), _folder(tmp_path / name / "b", rows, agent="uniform")
        assert compare(load_eval(a), load_eval(b), resamples=200)["overall"]["too_few_questions"] is warned
        assert main(["eval", "compare", str(a), str(b), "--resamples", "200"]) == 0
        out = capsys.readouterr().out
        assert ("(too few)" in out and "fewer than 10 questions means next to nothing" in out) is warned, out


def test_report_command_writes_markdown_json_and_a_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path / "ev", [_row("q1", "v1", True), _row("q2", "v2", False, duration=600.0)])
    assert main(["eval", "report", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "| all | 2 | 50.0% | 0.0% |" in out
    assert (folder / "report.md").is_file() and json.loads((folder / "report.json").read_text())["overall"]
    assert (folder / "tokens.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_is_a_png(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "ev", [_row("q1", "v1", True)])
    out = plot_tokens_vs_duration([load_eval(folder)], tmp_path / "p.png")
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_report_on_a_folder_without_an_eval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "holds no eval" in err and "Traceback" not in err


def test_the_report_counts_what_listening_cost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    heard = {"audio_s": 24.0, "transcriptions": 1, "transcribe_s": 2.5}
    rows = [_row("q1", "v1", True, **heard), _row("q2", "v1", True), _row("q3", "v2", False)]  # q2 read the store
    summary = summarize(rows)
    assert summary["mean_audio_s"] == 8.0 and summary["mean_transcriptions"] == pytest.approx(1 / 3)
    assert summary["mean_transcribe_s"] == pytest.approx(2.5 / 3)
    assert main(["eval", "report", str(_folder(tmp_path / "ev", rows))]) == 0
    out = capsys.readouterr().out
    assert "audio s (requests, time)" in out and "| 8.0 (0.3, 0.8 s) |" in out


def test_compare_shows_grounding_and_wall_time_per_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hit = {"truth_ranges": [[10.0, 20.0]], "cited_times": [15.0]}
    miss = {"truth_ranges": [[10.0, 20.0]], "cited_times": [400.0]}
    a = _folder(
        tmp_path / "a",
        [_row("q1", "v1", True, categories=["count"], wall_s=4.0, **hit), _row("q2", "v2", True, **miss)],
    )
    b = _folder(
        tmp_path / "b",
        [_row("q1", "v1", True, categories=["count"], wall_s=8.0, **miss), _row("q2", "v2", True, **hit)],
        agent="uniform",
    )
    cmp = compare(load_eval(a), load_eval(b), resamples=200)
    count = cmp["categories"]["count"]
    assert count["grounding_a"] == 1.0 and count["grounding_b"] == 0.0
    assert count["wall_a"] == 4.0 and count["wall_b"] == 8.0
    assert cmp["overall"]["grounding_a"] == 0.5 and cmp["overall"]["wall_a"] == 3.0
    assert main(["eval", "compare", str(a), str(b), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "| grounding A | grounding B |" in out and "| 100.0% | 0.0% | 1,000 | 1,000 | 4.0 s | 8.0 s |" in out


def test_report_of_several_evals_gives_accuracy_and_costs_per_kind_and_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One folder per agent: each kind's accuracy, tokens, wall time and grounding, per agent (and per duration)."""
    rlm = _folder(
        tmp_path / "rlm",
        [
            _row("c1", "v1", True, categories=["count"], tokens=5000, truth_ranges=[[1.0, 2.0]], cited_times=[1.5]),
            _row("c2", "v2", False, categories=["count"], tokens=7000, duration=600.0, groups={"duration": "10min"}),
            _row("n1", "v1", True, categories=["needle"], tokens=1000),
        ],
    )
    seek = _folder(
        tmp_path / "seek",
        [
            _row("c1", "v1", False, categories=["count"], tokens=2000),
            _error("c2", "v2", categories=["count"], duration=600.0, groups={"duration": "10min"}),
            _row("n1", "v1", True, categories=["needle"], tokens=900, wall_s=5.0),
        ],
        agent="videoseek",
    )
    from videoatlas.evals.kinds import kinds_by_agent

    entries = kinds_by_agent([load_eval(rlm), load_eval(seek)])
    table = {(e["kind"], e["agent"]): e for e in entries}
    assert [(e["kind"], e["agent"]) for e in entries] == [
        ("count", "video-rlm"),
        ("count", "videoseek"),
        ("needle", "video-rlm"),
        ("needle", "videoseek"),
    ]
    assert table["count", "video-rlm"]["accuracy"] == 0.5 and table["count", "video-rlm"]["mean_tokens"] == 6000
    assert table["count", "video-rlm"]["grounding_hit_rate"] == 1.0
    assert table["count", "videoseek"]["accuracy"] == 0.0 and table["count", "videoseek"]["error_rate"] == 0.5
    assert table["needle", "videoseek"]["mean_wall_s"] == 5.0
    split = kinds_by_agent([load_eval(rlm), load_eval(seek)], by="duration")
    assert [(e["kind"], e["group"], e["agent"], e["questions"]) for e in split if e["kind"] == "count"] == [
        ("count", "10min", "video-rlm", 1),
        ("count", "10min", "videoseek", 1),
        ("count", "1h", "video-rlm", 1),
        ("count", "1h", "videoseek", 1),
    ]
    assert main(["eval", "report", str(rlm), str(seek), "--by", "duration"]) == 0
    out = capsys.readouterr().out
    assert "| kind | duration | agent | eval |" in out
    assert f"| count | 1h | video-rlm | {rlm} | 1 | 100.0% | 0.0% | 5,000 | 3.0 | 2.0 s | 100.0% |" in out
    assert (rlm / "report.md").is_file() and (seek / "report.md").is_file()
    assert main(["eval", "report", str(rlm), "--by", "duration"]) == 0  # one agent's kinds by duration
    out = capsys.readouterr().out
    assert f"| count | 10min | video-rlm | {rlm} | 1 | 0.0% |" in out and "videoseek" not in out
