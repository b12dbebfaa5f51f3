"""Eval folders as the UI shows them: the report, one row per question linked to its run, comparisons.

Only the folders given on the command line are served, each by its position in that list: no
request names a path.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from videoatlas.evals.calibration import calibrate
from videoatlas.evals.compare import compare
from videoatlas.evals.plot import plot_reliability, plot_tokens_vs_duration
from videoatlas.evals.report import EvalData, load_eval, report
from videoatlas.evals.scoring import declined, failed, is_correct, scored


@dataclass(frozen=True, slots=True)
class EvalFolders:
    """The eval folders the UI may read, in the order given."""

    folders: tuple[Path, ...]

    @classmethod
    def check(cls, folders: Sequence[str | Path]) -> EvalFolders:
        """Every folder resolved and read once (a folder that holds no eval is refused up front)."""
        paths = tuple(Path(f).expanduser().resolve() for f in folders)
        for path in paths:
            load_eval(path)
        return cls(paths)

    def get(self, index: int) -> EvalData | None:
        """The eval at ``index`` read afresh (None: no such index)."""
        if not 0 <= index < len(self.folders):
            return None
        return load_eval(self.folders[index])


def _letter(index: int | None) -> str:
    return chr(ord("A") + index) if index is not None and 0 <= index < 26 else ""


def _choice(run: Mapping[str, Any] | None, index: int | None) -> str:
    if index is None:
        return ""
    choices = (run or {}).get("choices") or []
    text = choices[index] if 0 <= index < len(choices) else ""
    return f"{_letter(index)}. {text}" if text else _letter(index)


def result_text(row: dict[str, Any]) -> str:
    """A question's outcome in a word or two."""
    if failed(row):
        return "run failed"
    if declined(row):
        return "unanswered (the model declined)"
    if not scored(row):
        return "not scored"
    if row.get("parse_failed"):
        return "wrong (no valid answer)"
    return "correct" if is_correct(row) else "wrong"


def summary(index: int, data: EvalData) -> dict[str, Any]:
    """One line of the evals list."""
    rep = report(data)
    return {
        "index": index,
        "name": data.folder.name,
        "dataset": rep["dataset"],
        "agent": rep["agent"],
        "prompt_set": rep["prompt_set"],
        "model": rep["model"],
        "questions": rep["overall"]["questions"],
        "accuracy": rep["overall"]["accuracy"],
    }


def question_rows(data: EvalData, runs: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per attempted question, wrong ones first, each with the run that produced it."""
    out = []
    for row in data.rows:
        run = runs.get(row.get("run_id") or "")
        out.append(
            {
                "item": row["item"],
                "question": (run or {}).get("question", ""),
                "categories": row.get("categories") or [],
                "correct": is_correct(row),
                "declined": declined(row),
                "result": result_text(row),
                "truth": _choice(run, row.get("truth_index")) or (row.get("truth_text") or ""),
                "answer": _choice(run, row.get("answer_index")) or (row.get("answer") or ""),
                "tokens": row.get("tokens"),
                "wall_s": row.get("wall_s"),
                "run_id": row.get("run_id"),
                "in_store": run is not None,
            }
        )
    return sorted(out, key=lambda q: (q["correct"], q["item"]))


def flipped(a: EvalData, b: EvalData, runs: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Questions both evals scored whose correctness differs, each with its run on either side."""
    rows_a = {r["item"]: r for r in a.rows if scored(r)}
    rows_b = {r["item"]: r for r in b.rows if scored(r)}
    out = []
    for item in sorted(rows_a.keys() & rows_b.keys()):
        ra, rb = rows_a[item], rows_b[item]
        if is_correct(ra) == is_correct(rb):
            continue
        run = runs.get(ra.get("run_id") or "") or runs.get(rb.get("run_id") or "")
        out.append(
            {
                "item": item,
                "question": (run or {}).get("question", ""),
                "correct_a": is_correct(ra),
                "correct_b": is_correct(rb),
                "result_a": result_text(ra),
                "result_b": result_text(rb),
                "truth": _choice(run, ra.get("truth_index")) or (ra.get("truth_text") or ""),
                "run_a": ra.get("run_id") if ra.get("run_id") in runs else None,
                "run_b": rb.get("run_id") if rb.get("run_id") in runs else None,
            }
        )
    return out


def comparison(a: EvalData, b: EvalData, resamples: int = 2000) -> dict[str, Any]:
    """The paired comparison of ``videoatlas eval compare`` (bootstrap over videos)."""
    return compare(a, b, resamples=resamples)


def report_of(data: EvalData) -> dict[str, Any]:
    """The eval's report (``videoatlas eval report --json``)."""
    return report(data)


def plot_png(data: EvalData) -> bytes:
    """The tokens-vs-duration plot of one eval, as PNG bytes."""
    with tempfile.TemporaryDirectory(prefix="videoatlas-ui-") as tmp:
        return plot_tokens_vs_duration([data], Path(tmp) / "tokens.png").read_bytes()


def reliability_png(data: EvalData) -> bytes | None:
    """The reliability plot of one eval's confidence, as PNG bytes (None: no answer carried a probability)."""
    calibration = calibrate(data.rows).as_dict()
    if not calibration["recorded"]:
        return None
    with tempfile.TemporaryDirectory(prefix="videoatlas-ui-") as tmp:
        return plot_reliability({data.label: calibration}, Path(tmp) / "reliability.png").read_bytes()
