"""Two evals side by side on the questions both attempted: B - A with a bootstrap CI clustered by video.

Each side's calibration (:mod:`.calibration`) is over the same paired questions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from videoatlas.errors import BadInputError
from videoatlas.evals.calibration import calibrate
from videoatlas.evals.iou import row_iou
from videoatlas.evals.report import (
    EvalData,
    calibrations_lines,
    gpu_cost,
    grounding_hit,
    iou_text,
    mean_of,
    mean_or_none,
)
from videoatlas.evals.scoring import declined, failed, is_correct, scored


def paired_bootstrap(
    pairs: Sequence[tuple[str, float]], resamples: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float, float]:
    """Mean difference and its confidence interval, resampling whole clusters (videos) with replacement.

    ``pairs`` holds (cluster, difference) per question: questions on one video are not independent,
    so the video is the unit that is resampled.
    """
    if not pairs:
        raise BadInputError("nothing to compare: the two evals share no attempted question")
    clusters: dict[str, list[float]] = {}
    for cluster, diff in pairs:
        clusters.setdefault(cluster, []).append(diff)
    sums = np.array([sum(v) for v in clusters.values()], dtype=float)
    counts = np.array([len(v) for v in clusters.values()], dtype=float)
    mean = float(sums.sum() / counts.sum())
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(sums), size=(resamples, len(sums)))
    stats = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    alpha = (1 - level) / 2
    low, high = np.quantile(stats, [alpha, 1 - alpha])
    return mean, float(low), float(high)


def _hit_rate(rows: Iterable[dict[str, Any]]) -> float | None:
    """The grounding hit rate over the rows whose questions mark ranges (None when none does)."""
    return mean_or_none(None if (h := grounding_hit(r)) is None else float(h) for r in rows)


MIN_QUESTIONS_FOR_CI = 10
"""Below this many paired questions a bootstrap interval says next to nothing, and the comparison says so."""


def compare(a: EvalData, b: EvalData, resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Side by side on the questions both attempted: accuracy, errors, cost, and B - A with a clustered CI.

    ``calibration`` holds each side's (``a``, ``b``) over those questions, overall.
    A question whose run failed on one side is paired as a wrong answer on that side, never dropped;
    one left unanswered (the final decision declined) is paired as not right, and counted apart.
    """
    rows_a = {r["item"]: r for r in a.rows if scored(r)}
    rows_b = {r["item"]: r for r in b.rows if scored(r)}
    shared = sorted(rows_a.keys() & rows_b.keys())
    if not shared:
        raise BadInputError(f"{a.folder} and {b.folder} share no attempted question")

    def section(items: Sequence[str]) -> dict[str, Any]:
        pairs = [(rows_a[i]["video_id"], float(is_correct(rows_b[i])) - float(is_correct(rows_a[i]))) for i in items]
        diff, low, high = paired_bootstrap(pairs, resamples, seed)
        return {
            "questions": len(items),
            "videos": len({rows_a[i]["video_id"] for i in items}),
            "accuracy_a": mean_of(float(is_correct(rows_a[i])) for i in items),
            "accuracy_b": mean_of(float(is_correct(rows_b[i])) for i in items),
            "error_rate_a": mean_of(float(failed(rows_a[i])) for i in items),
            "error_rate_b": mean_of(float(failed(rows_b[i])) for i in items),
            "declined_a": sum(declined(rows_a[i]) for i in items),
            "declined_b": sum(declined(rows_b[i]) for i in items),
            "difference": diff,
            "ci_low": low,
            "ci_high": high,
            "iou_a": mean_or_none(row_iou(rows_a[i]) for i in items),
            "iou_b": mean_or_none(row_iou(rows_b[i]) for i in items),
            "too_few_questions": len(items) < MIN_QUESTIONS_FOR_CI,
            "tokens_a": mean_of(rows_a[i]["tokens"] for i in items if not failed(rows_a[i])),
            "tokens_b": mean_of(rows_b[i]["tokens"] for i in items if not failed(rows_b[i])),
            "gpu_a": gpu_cost([rows_a[i] for i in items if not failed(rows_a[i])]),
            "gpu_b": gpu_cost([rows_b[i] for i in items if not failed(rows_b[i])]),
            "wall_a": mean_of(rows_a[i]["wall_s"] for i in items if not failed(rows_a[i])),
            "wall_b": mean_of(rows_b[i]["wall_s"] for i in items if not failed(rows_b[i])),
            "grounding_a": _hit_rate(rows_a[i] for i in items),
            "grounding_b": _hit_rate(rows_b[i] for i in items),
        }

    cats: dict[str, list[str]] = {}
    for item in shared:
        for cat in rows_a[item].get("categories") or ["(none)"]:
            cats.setdefault(cat, []).append(item)
    return {
        "a": a.label,
        "b": b.label,
        "resamples": resamples,
        "only_a": len(rows_a.keys() - rows_b.keys()),
        "only_b": len(rows_b.keys() - rows_a.keys()),
        "overall": section(shared),
        "categories": {cat: section(items) for cat, items in sorted(cats.items())},
        "calibration": {
            "a": calibrate([rows_a[i] for i in shared]).as_dict(),
            "b": calibrate([rows_b[i] for i in shared]).as_dict(),
        },
    }


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def render_comparison(cmp: dict[str, Any]) -> str:
    """The comparison for people."""
    lines = [
        f"A = {cmp['a']}",
        f"B = {cmp['b']}",
        f"paired on questions both attempted ({cmp['only_a']} only in A, {cmp['only_b']} only in B), "
        "a failed run counting as wrong, an unanswered one (the model declined) as not right; "
        f"95% CI from {cmp['resamples']} bootstrap resamples of videos",
        "",
        "| kind | questions | videos | accuracy A | accuracy B | errors A | errors B | B - A | 95% CI | "
        "unanswered A | unanswered B | IoU A | IoU B | grounding A | grounding B | tokens A | tokens B | "
        "wall A | wall B |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |" + " ---: |" * 10,
    ]
    for name, s in [("overall", cmp["overall"]), *cmp["categories"].items()]:
        few = " (too few)" if s["too_few_questions"] else ""
        lines.append(
            f"| {name} | {s['questions']} | {s['videos']} | {s['accuracy_a']:.1%} | {s['accuracy_b']:.1%} | "
            f"{s['error_rate_a']:.1%} | {s['error_rate_b']:.1%} | "
            f"{s['difference']:+.1%} | [{s['ci_low']:+.1%}, {s['ci_high']:+.1%}]{few} | "
            f"{s['declined_a']} | {s['declined_b']} | "
            f"{iou_text(s['iou_a'])} | {iou_text(s['iou_b'])} | {_pct(s['grounding_a'])} | {_pct(s['grounding_b'])} | "
            f"{s['tokens_a']:,.0f} | {s['tokens_b']:,.0f} | {s['wall_a']:.1f} s | {s['wall_b']:.1f} s |"
        )
    overall = cmp["overall"]
    lines += [
        "",
        "What the GPU spent per question (overall, means over the runs that finished): prompt tokens (image / "
        "text), from the prefix cache, prefilled, completion",
        "",
        "| side | prompt tokens | image | text | from the prefix cache | prefilled (uncached) | completion |",
        "| --- |" + " ---: |" * 6,
    ]
    for side in ("a", "b"):
        g = overall[f"gpu_{side}"]
        lines.append(
            f"| {side.upper()} | {_cell(g['mean_prompt_tokens'])} | {_cell(g['mean_image_tokens'])} | "
            f"{_cell(g['mean_text_tokens'])} | {_cell(g['mean_cached_tokens'])} | {_cell(g['mean_uncached_tokens'])} | "
            f"{_cell(g['mean_completion_tokens'])} |"
        )
    sections = [cmp["overall"], *cmp["categories"].values()]
    if any(s["too_few_questions"] for s in sections):
        lines += [
            "",
            f"(too few): an interval over fewer than {MIN_QUESTIONS_FOR_CI} questions means next to nothing; "
            "run more questions before reading a difference from it",
        ]
    sides = {side.upper(): c for side, c in cmp["calibration"].items()}
    lines += ["", "On the paired questions:", "", *calibrations_lines("side", sides)]
    return "\n".join(lines) + "\n"
