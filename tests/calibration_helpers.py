"""Hand-made eval result rows with probabilities and confidences, and an eval folder to hold them.

The rows and the figures worked out from them by hand are in ``tests/evals/test_calibration_report.py``;
the web UI's calibration test shows the same folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def plain_row(item: str, **extra: Any) -> dict[str, Any]:
    """A finished multiple-choice row (four choices, truth 0) as the runner writes it, before calibration."""
    row: dict[str, Any] = {
        "status": "ok", "key": f"k-{item}", "item": item, "video_id": f"v-{item}", "categories": ["needle"],
        "groups": {"duration": "10m"}, "duration": 600.0, "truth_index": 0, "truth_text": None, "truth_ranges": [],
        "answer": "", "answer_index": 0, "declined": False, "correct": True, "parse_failed": False,
        "grounded": True, "calls": 2, "tokens": 1000, "prompt_tokens": 900, "cached_tokens": 0,
        "tokens_by_role": {"master": 1000}, "wall_s": 1.0, "rounds": 1, "evidence": 1, "evidence_times": [],
        "cited_times": [],
    }  # fmt: skip
    row.update(extra)
    return row


def choice_row(item: str, probabilities: list[float], answer: int, truth: int = 0) -> dict[str, Any]:
    """A multiple-choice row whose confidence is its answer's probability."""
    return plain_row(
        item,
        probabilities=probabilities,
        confidence=probabilities[answer],
        answer_index=answer,
        truth_index=truth,
        correct=answer == truth,
    )


def open_row(item: str, answer: str, confidence: float | None, truth: str | None = "3", **extra: Any) -> dict[str, Any]:
    """An open question's row: no probabilities, the answer's confidence (None: no known value, unscored)."""
    return plain_row(
        item,
        **{
            "truth_index": None, "truth_text": truth, "answer": answer, "answer_index": None,
            "probabilities": None, "confidence": confidence, "correct": answer == truth, **extra,
        },
    )  # fmt: skip


def hand_made_rows() -> list[dict[str, Any]]:
    """The rows of ``test_calibration_report.py``'s docstring, out of item order (the figures must not depend on it)."""
    old = plain_row("q15")  # no "probabilities", no "confidence": written before they were recorded
    failed = {
        k: v
        for k, v in plain_row("q16").items()
        if k in ("key", "item", "video_id", "categories", "groups", "duration")
    }
    failed.update(status="error", truth_index=0, truth_text=None, truth_ranges=[], answer_index=None, correct=False)
    failed.update(parse_failed=False, error="EndpointError: down")
    return [
        choice_row("q07", [0.7, 0.2, 0.1, 0.0], 0),
        choice_row("q06", [0.2, 0.7, 0.1, 0.0], 1),
        choice_row("q01", [0.9, 0.1, 0.0, 0.0], 0),
        choice_row("q02", [1.0, 0.0, 0.0, 0.0], 0),
        choice_row("q03", [0.05, 0.95, 0.0, 0.0], 1),
        choice_row("q05", [0.7, 0.3, 0.0, 0.0], 0),
        choice_row("q04", [0.7, 0.1, 0.1, 0.1], 0),
        choice_row("q08", [0.4, 0.5, 0.1, 0.0], 1),
        choice_row("q09", [0.5, 0.3, 0.2, 0.0], 0),
        choice_row("q10", [0.3, 0.25, 0.25, 0.2], 0, truth=1),
        open_row("q11", "3", 0.8),
        open_row("q12", "7", 0.2),
        open_row("q13", "", 0.6, declined=True),
        plain_row(
            "q14",
            probabilities=[0.4, 0.3, 0.2, 0.1],
            confidence=None,
            answer_index=None,
            correct=False,
            parse_failed=True,
        ),
        old,
        failed,
        open_row("q17", "blue", 0.9, truth=None),
    ]


def eval_folder(path: Path, rows: list[dict[str, Any]], agent: str = "video-rlm") -> Path:
    """An eval folder (``eval.json`` expecting every row's key, ``results.jsonl``) holding ``rows``."""
    path.mkdir(parents=True)
    meta = {
        "dataset": "synthetic", "agent": agent, "prompt_set": "default", "prompt_sha": "abc", "model": "m",
        "results": "results.jsonl", "keys": {r["item"]: r["key"] for r in rows},
    }  # fmt: skip
    (path / "eval.json").write_text(json.dumps(meta))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
