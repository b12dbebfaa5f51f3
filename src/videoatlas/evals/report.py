"""Evaluation reports: accuracy per category, costs, grounding, calibration (:mod:`.calibration`).

Comparisons are :mod:`.compare`'s, the plots :mod:`.plot`'s.

A question's current result is the latest row whose key matches the key its folder's ``eval*.json``
now expects: results of an edited prompt set, other agent code or another model stay in the file but
are not reported.

One scoring rule everywhere: every attempted question with a known answer is in the accuracy's
denominator. A run that failed (status ``error``) or whose final call gave no valid answer is
wrong; the error rate (runs that failed) and the parse-failure rate are reported beside accuracy.
A final decision that declined (found no answer to an open question) leaves its question unanswered:
never right, counted apart (``declined``), neither a parse failure nor an answer given without evidence.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from videoatlas.errors import BadInputError
from videoatlas.evals.calibration import BINS, COVERAGES, calibrate
from videoatlas.evals.iou import row_iou
from videoatlas.evals.results import row_tokens_by_role
from videoatlas.evals.runner import read_rows
from videoatlas.evals.scoring import declined, failed, is_correct, scored
from videoatlas.state.models import roles_text

GROUNDING_TOLERANCE_S = 1.0
"""An evidence frame this close to a ground-truth range counts as a hit."""


@dataclass(slots=True)
class EvalData:
    """The current rows of one output folder and what was asked for."""

    folder: Path
    metas: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    """One row per attempted question: its latest current row, finished (``ok``) or failed."""
    pending: int
    """Questions asked for but with no current row yet."""
    interrupted: int = 0
    """Questions whose latest run an outage stopped (the endpoint or the database, not the question): not
    scored, like pending ones; re-running the eval resumes them."""

    @property
    def rerun_needed(self) -> bool:
        """Whether running the eval again would change it: questions not run yet, interrupted, or failed."""
        return bool(self.pending or self.interrupted or self.errors)

    @property
    def answered(self) -> list[dict[str, Any]]:
        """Rows of questions whose run finished (the ones that have costs and evidence)."""
        return [r for r in self.rows if not failed(r)]

    @property
    def errors(self) -> list[dict[str, Any]]:
        """Rows of questions whose latest run failed (each scored as a wrong answer)."""
        return [r for r in self.rows if failed(r)]

    @property
    def label(self) -> str:
        """How the folder is named in tables and plots: folder name, agent, prompt set."""
        meta = self.metas[0]
        return f"{self.folder.name} ({meta['agent']}, prompts {meta['prompt_set']})"


def load_eval(folder: str | Path) -> EvalData:
    """Read an output folder written by ``videoatlas eval run`` (every shard of it)."""
    path = Path(folder).expanduser()
    meta_files = sorted(path.glob("eval*.json"))
    if not meta_files:
        raise BadInputError(f"{path} holds no eval (no eval.json; run `videoatlas eval run --out {path}` first)")
    metas, rows, pending, interrupted = [], [], 0, 0
    for meta_file in meta_files:
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            raise BadInputError(f"{meta_file}: not valid JSON") from None
        metas.append(meta)
        expected: dict[str, str] = meta["keys"]
        latest: dict[str, dict[str, Any]] = {}
        for row in read_rows(path / meta["results"]):
            if expected.get(row.get("item", "")) == row.get("key"):
                latest[row["item"]] = row  # later lines win: a retried error is replaced by its result
        for item in expected:
            current = latest.get(item)
            if current is None:
                pending += 1
            elif current.get("status") == "interrupted":
                interrupted += 1
            else:
                rows.append(current)
    agents = {(m["agent"], str(m.get("agent_code")), m["prompt_sha"], m["model"]) for m in metas}
    if len(agents) > 1:
        raise BadInputError(f"{path}: shards disagree on agent, agent code, prompt set or model ({sorted(agents)})")
    return EvalData(path, metas, rows, pending, interrupted)


def grounding_hit(row: dict[str, Any], tolerance: float = GROUNDING_TOLERANCE_S) -> bool | None:
    """Whether the evidence the answer rests on lies in a ground-truth range (None: no ranges known).

    The cited frames are checked, or every collected frame when the answer cited none; a failed
    run has no evidence, so it misses.
    """
    ranges = row.get("truth_ranges") or []
    if not ranges:
        return None
    times = row.get("cited_times") or row.get("evidence_times") or []
    return any(s - tolerance <= t <= e + tolerance for t in times for s, e in ranges)


def mean_or_none(values: Iterable[float | None]) -> float | None:
    """The mean of the known values (None when there is none)."""
    known = [v for v in values if v is not None]
    return statistics.fmean(known) if known else None


def mean_of(values: Iterable[float]) -> float:
    """The mean (0 when there is nothing to average)."""
    data = list(values)
    return statistics.fmean(data) if data else 0.0


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy, error and parse-failure rates, costs and grounding over ``rows`` (finished and failed).

    Accuracy and the rates are over every attempted question, a failed run counting as wrong and
    as a grounding miss; costs are means over the runs that finished (a failed run's are not known).
    ``declined``: the questions left unanswered because the final decision found no answer.
    """
    answered = [r for r in rows if not failed(r)]
    marked = [r for r in rows if scored(r)]
    prompt = sum(r["prompt_tokens"] for r in answered)
    hits = [h for h in (grounding_hit(r) for r in rows) if h is not None]
    ious = [v for v in (row_iou(r) for r in rows) if v is not None]
    return {
        "questions": len(rows),
        "answered": len(answered),
        "failed": len(rows) - len(answered),
        "scored": len(marked),
        "accuracy": sum(is_correct(r) for r in marked) / len(marked) if marked else None,
        "error_rate": (len(rows) - len(answered)) / len(rows) if rows else None,
        "parse_failure_rate": sum(bool(r["parse_failed"]) for r in answered) / len(rows) if rows else None,
        "declined": sum(declined(r) for r in rows),
        "declined_rate": sum(declined(r) for r in rows) / len(rows) if rows else None,
        "without_evidence_rate": (sum(_without_evidence(r) for r in answered) / len(answered) if answered else None),
        "runs_with_fallbacks": sum(1 for r in answered if r.get("fallbacks")),
        "mean_tokens": mean_of(r["tokens"] for r in answered),
        "mean_tokens_by_role": mean_tokens_by_role(answered),
        "cache_hit_rate": sum(r["cached_tokens"] for r in answered) / prompt if prompt else None,
        **gpu_cost(answered),
        "mean_calls": mean_of(r["calls"] for r in answered),
        "mean_frames_viewed": mean_of(r.get("frames_viewed", 0) for r in answered),
        "mean_frames_sent": mean_of(r.get("frames_sent", 0) for r in answered),
        "mean_index_frames": mean_of(r.get("index_frames", 0) for r in answered),
        "mean_index_s": mean_of(r.get("index_s", 0.0) for r in answered),
        "mean_audio_s": mean_of(r.get("audio_s", 0.0) for r in answered),
        "mean_transcriptions": mean_of(r.get("transcriptions", 0) for r in answered),
        "mean_transcribe_s": mean_of(r.get("transcribe_s", 0.0) for r in answered),
        "mean_wall_s": mean_of(r["wall_s"] for r in answered),
        "mean_rounds": mean_of(r["rounds"] for r in answered),
        "mean_evidence": mean_of(r["evidence"] for r in answered),
        "grounding_hit_rate": sum(hits) / len(hits) if hits else None,
        "grounded_questions": len(hits),
        "mean_iou": statistics.fmean(ious) if ious else None,
        "iou_questions": len(ious),
    }


def gpu_cost(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What a GPU spends per question, as means over finished runs' rows.

    The prompt split into image and text tokens, what the prefix cache served, the uncached prefill,
    completion and reasoning tokens, images sent. Image tokens are estimated from the images' sizes (rows
    from before they were counted give None for the split); the rest are the server's own counts.
    """

    def known(key: str) -> float | None:
        return mean_or_none(r.get(key) for r in rows)

    return {
        "mean_prompt_tokens": mean_of(r["prompt_tokens"] for r in rows),
        "mean_image_tokens": known("image_tokens"),
        "mean_text_tokens": mean_or_none(
            r["prompt_tokens"] - r["image_tokens"] if "image_tokens" in r else None for r in rows
        ),
        "mean_cached_tokens": mean_of(r["cached_tokens"] for r in rows),
        "mean_uncached_tokens": mean_of(r["prompt_tokens"] - r["cached_tokens"] for r in rows),
        "mean_completion_tokens": known("completion_tokens"),
        "mean_reasoning_tokens": known("reasoning_tokens"),
        "mean_images": known("images"),
    }


def _tokens_cell(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _gpu_table(title: str, summaries: dict[str, dict[str, Any]]) -> list[str]:
    """Per question, what the GPU spent: prompt (image / text), cached, uncached prefill, completion, images."""
    lines = [
        f"| {title} | prompt tokens | image | text | from the prefix cache | prefilled (uncached) | completion | "
        "reasoning | images |",
        "| --- |" + " ---: |" * 8,
    ]
    for name, s in summaries.items():
        lines.append(
            f"| {name} | {_tokens_cell(s['mean_prompt_tokens'])} | {_tokens_cell(s['mean_image_tokens'])} | "
            f"{_tokens_cell(s['mean_text_tokens'])} | {_tokens_cell(s['mean_cached_tokens'])} "
            f"({_pct(s['cache_hit_rate'])}) | {_tokens_cell(s['mean_uncached_tokens'])} | "
            f"{_tokens_cell(s['mean_completion_tokens'])} | {_tokens_cell(s['mean_reasoning_tokens'])} | "
            f"{_tokens_cell(s['mean_images'])} |"
        )
    return lines


def mean_tokens_by_role(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Mean tokens per run by role over finished runs' rows (a run whose agent has no such role spent 0 in it).

    Rows from before roles were the agents' read as the roles ``master`` and ``worker``
    (:func:`~videoatlas.evals.results.row_tokens_by_role`).
    """
    spent = [row_tokens_by_role(r) for r in rows]
    roles = sorted({role for by_role in spent for role in by_role})
    return {role: mean_of(by_role.get(role, 0) for by_role in spent) for role in roles}


def _without_evidence(row: dict[str, Any]) -> bool:
    """An answer given although the final decision cited no evidence (rows from before this was kept: False)."""
    return bool(row.get("answer")) and row.get("grounded") is False


def by_category(rows: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows per category; a question with several categories counts in each (as LVBench defines)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        for cat in row.get("categories") or ["(none)"]:
            out.setdefault(cat, []).append(row)
    return dict(sorted(out.items()))


def by_group(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Rows per value of each grouping axis (e.g. duration)."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for row in rows:
        for axis, value in (row.get("groups") or {}).items():
            out.setdefault(axis, {}).setdefault(str(value), []).append(row)
    return {axis: dict(sorted(values.items(), key=lambda kv: _order_key(kv[1]))) for axis, values in out.items()}


def _order_key(rows: list[dict[str, Any]]) -> tuple[float, str]:
    durations = [r.get("duration") or 0.0 for r in rows]
    return (mean_of(durations), str(rows[0].get("groups")))


def report(data: EvalData) -> dict[str, Any]:
    """The whole report as plain data (``--json``)."""
    meta = data.metas[0]
    return {
        "folder": str(data.folder),
        "dataset": meta["dataset"],
        "agent": meta["agent"],
        "agent_code": meta.get("agent_code"),
        "prompt_set": meta["prompt_set"],
        "prompt_sha": meta["prompt_sha"],
        "model": meta["model"],
        "pending": data.pending,
        "interrupted": data.interrupted,
        "errors": len(data.errors),
        "rerun_needed": data.rerun_needed,
        "subset": meta.get("subset"),
        "skipped": _skipped(data.metas),
        "overall": summarize(data.rows),
        "calibration": calibrate(data.rows).as_dict(),
        "escalation": escalation(data.rows),
        "categories": {cat: summarize(rows) for cat, rows in by_category(data.rows).items()},
        "groups": {
            axis: {value: summarize(rows) for value, rows in values.items()}
            for axis, values in by_group(data.rows).items()
        },
    }


def _path_means(rows: Sequence[dict[str, Any]], path: str) -> dict[str, float] | None:
    costs = [r["path_costs"][path] for r in rows if path in (r.get("path_costs") or {})]
    if not costs:
        return None
    return {"calls": mean_of(c["calls"] for c in costs), "tokens": mean_of(c["tokens"] for c in costs)}


def escalation(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """An escalating agent's paths over the finished runs (None when no row says which path it took).

    ``escalated_rate``: the share of those questions handed over to the search agent; the mean calls and tokens of
    the uniform pass (every question), of the search pass (the escalated ones), and per question on each route:
    kept (the uniform pass alone) and escalated (both passes).
    """
    runs = [r for r in rows if r.get("status") == "ok" and r.get("escalated") is not None]
    if not runs:
        return None
    handed = [r for r in runs if r["escalated"]]
    kept = [r for r in runs if not r["escalated"]]

    def route(selected: list[dict[str, Any]]) -> dict[str, float] | None:
        if not selected:
            return None
        return {"calls": mean_of(r["calls"] for r in selected), "tokens": mean_of(r["tokens"] for r in selected)}

    return {
        "questions": len(runs),
        "escalated": len(handed),
        "escalated_rate": len(handed) / len(runs),
        "uniform_pass": _path_means(runs, "uniform"),
        "search_pass": _path_means(handed, "search"),
        "kept_route": route(kept),
        "escalated_route": route(handed),
    }


def escalation_lines(esc: dict[str, Any] | None) -> list[str]:
    """The report's escalation table (nothing for an agent that does not escalate)."""
    if esc is None:
        return []

    def cells(means: dict[str, float] | None) -> str:
        return "- | -" if means is None else f"{means['calls']:.1f} | {means['tokens']:,.0f}"

    return [
        f"Escalation: {esc['escalated']} of {esc['questions']} finished question(s) handed over to the search agent "
        f"({_pct(esc['escalated_rate'])}); mean calls and tokens of each pass, and per question on each route.",
        "",
        "| path | questions | mean calls | mean tokens |",
        "| --- | ---: | ---: | ---: |",
        f"| uniform pass | {esc['questions']} | {cells(esc['uniform_pass'])} |",
        f"| search pass | {esc['escalated']} | {cells(esc['search_pass'])} |",
        f"| kept (uniform only) | {esc['questions'] - esc['escalated']} | {cells(esc['kept_route'])} |",
        f"| escalated (both) | {esc['escalated']} | {cells(esc['escalated_route'])} |",
        "",
    ]


def _skipped(metas: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The records the dataset skipped (the same in every shard's ``eval.json``): malformed ones and the rest."""
    recorded = metas[0].get("skipped") or {}
    malformed = recorded.get("malformed") or []
    excluded: dict[str, int] = recorded.get("excluded") or {}
    return {"malformed": len(malformed), "excluded": excluded, "records": malformed}


def iou_text(value: float | None) -> str:
    """An IoU as a table cell."""
    return "-" if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _table(title: str, summaries: dict[str, dict[str, Any]]) -> list[str]:
    lines = [
        f"| {title} | questions | accuracy | errors | parse fail | unanswered (declined) | no evidence | fallbacks | "
        "mean tokens (by role) | cache hit | frames viewed (sent) | index frames (build) | "
        "audio s (requests, time) | calls | rounds | evidence | wall | "
        "grounding | IoU |",
        "| --- |" + " ---: |" * 18,
    ]
    for name, s in summaries.items():
        lines.append(
            f"| {name} | {s['questions']} | {_pct(s['accuracy'])} | {_pct(s['error_rate'])} | "
            f"{_pct(s['parse_failure_rate'])} | {_declined_text(s)} | {_pct(s['without_evidence_rate'])} | "
            f"{s['runs_with_fallbacks']} | "
            f"{_tokens_text(s)} | "
            f"{_pct(s['cache_hit_rate'])} | {s['mean_frames_viewed']:,.0f} ({s['mean_frames_sent']:,.0f}) | "
            f"{s['mean_index_frames']:,.0f} ({s['mean_index_s']:.1f} s) | "
            f"{s.get('mean_audio_s', 0.0):,.1f} ({s.get('mean_transcriptions', 0.0):.1f}, "
            f"{s.get('mean_transcribe_s', 0.0):.1f} s) | "
            f"{s['mean_calls']:.1f} | {s['mean_rounds']:.1f} | "
            f"{s['mean_evidence']:.1f} | {s['mean_wall_s']:.1f} s | {_pct(s['grounding_hit_rate'])} | "
            f"{iou_text(s['mean_iou'])} |"
        )
    return lines


def _tokens_text(summary: dict[str, Any]) -> str:
    """Mean tokens as a table cell, with the mean by role when any role spent some: ``8,020 (master 5,100, ...)``."""
    roles = roles_text(summary.get("mean_tokens_by_role") or {})
    return f"{summary['mean_tokens']:,.0f}" + (f" ({roles})" if roles else "")


def _declined_text(summary: dict[str, Any]) -> str:
    """The unanswered questions as a table cell: how many, and their share (``0`` when none declined)."""
    n = summary.get("declined", 0)
    return f"{n} ({_pct(summary.get('declined_rate'))})" if n else "0"


def _skipped_lines(rep: dict[str, Any]) -> list[str]:
    lines = [f"subset: {', '.join(rep['subset'])}"] if rep.get("subset") else []
    skipped = rep.get("skipped") or {}
    parts = [f"{n} {reason}" for reason, n in (skipped.get("excluded") or {}).items()]
    if skipped.get("malformed"):
        parts.insert(0, f"{skipped['malformed']} malformed (see report.json)")
    if parts:
        lines.append("records skipped by the dataset: " + "; ".join(parts))
    return [*lines, ""] if lines else []


def _rerun_lines(rep: dict[str, Any]) -> list[str]:
    """Whether the eval needs running again, and why (empty when it is complete)."""
    if not rep.get("rerun_needed"):
        return []
    why = []
    if rep.get("interrupted"):
        why.append(f"{rep['interrupted']} interrupted by an outage resume from their checkpoints")
    if rep["pending"]:
        why.append(f"{rep['pending']} not run yet run")
    if rep["errors"]:
        why.append(f"{rep['errors']} that failed to run are tried again")
    return ["**Re-run needed**: run the same `eval run` command again (" + "; ".join(why) + ").", ""]


def score_text(value: float | None) -> str:
    """An ECE or a Brier score as a table cell (three decimals)."""
    return "-" if value is None else f"{value:.3f}"


def _brier_text(value: float | None, rows: int) -> str:
    return "-" if value is None else f"{value:.3f} ({rows})"


CALIBRATION_NOTE = (
    f"Calibration of the model's confidence (the probability it gave its answer), over the answered questions "
    f"that have one: ECE over {BINS} equal-width confidence bins, weighted by their counts (0: calibrated); "
    "Brier over the choices' probabilities, the sum over choices of (p - [the truth])^2 (0 to 2), and binary "
    "Brier (confidence - [right])^2 for answers with only a confidence (0 to 1), kept apart, each with the "
    "questions it is over; accuracy at X% coverage: of the X% most confident answers. Declined questions and "
    "answers without a probability are left out and counted apart."
)


def calibration_table(title: str, calibrations: dict[str, dict[str, Any]]) -> list[str]:
    """One line per agent (or side): ECE, both Brier forms, accuracy at each coverage, the counts."""
    coverage = " | ".join(f"accuracy at {p}%" for p in COVERAGES)
    lines = [
        f"| {title} | calibrated | ECE | Brier (choices) | Brier (binary) | {coverage} | declined | no probability |",
        "| --- |" + " ---: |" * (6 + len(COVERAGES)),
    ]
    for name, c in calibrations.items():
        accuracies = " | ".join(_pct(c["accuracy_at_coverage"][str(p)]) for p in COVERAGES)
        lines.append(
            f"| {name} | {c['rows']} | {score_text(c['ece'])} | {_brier_text(c['brier'], c['brier_rows'])} | "
            f"{_brier_text(c['brier_binary'], c['brier_binary_rows'])} | {accuracies} | {c['declined']} | "
            f"{c['without_probability']} |"
        )
    return lines


def calibrations_lines(title: str, calibrations: dict[str, dict[str, Any]]) -> list[str]:
    """Several agents' (or a comparison's sides') calibration in one table, or that none recorded probabilities."""
    if not any(c["recorded"] for c in calibrations.values()):
        return ["Calibration: no probabilities were recorded."]
    return [CALIBRATION_NOTE, "", *calibration_table(title, calibrations)]


def no_probability_text(calibration: dict[str, Any]) -> str:
    """What a report says when no answer carried a probability."""
    return (
        f"Calibration: no probabilities were recorded ({calibration['without_probability']} answered question(s) "
        "without one: the server gave no log-probabilities, or the rows were written before they were kept)."
    )


def calibration_lines(calibration: dict[str, Any]) -> list[str]:
    """The report's calibration: its table and the reliability bins, or that no probabilities were recorded."""
    if not calibration["recorded"]:
        return [no_probability_text(calibration), ""]
    lines = [CALIBRATION_NOTE, "", *calibration_table("calibration", {"all": calibration}), ""]
    lines += [
        "Reliability (the bins that hold answers; the plot draws them against the diagonal):",
        "",
        "| confidence | questions | mean confidence | accuracy |",
        "| --- | ---: | ---: | ---: |",
    ]
    for b in calibration["bins"]:
        if b["count"]:
            edges = f"{b['low']:.1f}-{b['high']:.1f}"
            lines.append(f"| {edges} | {b['count']} | {b['mean_confidence']:.3f} | {_pct(b['accuracy'])} |")
    return [*lines, ""]


def render_markdown(rep: dict[str, Any]) -> str:
    """The report for people, as Markdown tables."""
    lines = [
        f"# Eval: {rep['dataset']} with {rep['agent']}",
        "",
        f"model `{rep['model']}`, agent code `{rep['agent_code'] or 'unrecorded'}`, "
        f"prompt set `{rep['prompt_set']}` ({rep['prompt_sha']}); "
        f"{rep['overall']['answered']} answered, {rep['errors']} failed to run (the question's: a bad video, "
        f"a refused request), {rep.get('interrupted', 0)} interrupted by an outage (the endpoint's or the "
        f"database's: not scored), {rep['pending']} not run yet; of those answered, {rep['overall']['declined']} "
        "left unanswered (the model found no answer and declined)",
        "",
        *_rerun_lines(rep),
        "Accuracy counts every attempted question: a run that failed (errors) or gave no valid answer "
        "(parse fail) is wrong. Unanswered (declined): open questions whose final decision said it found no "
        "answer; they have no answer (never right, never a parse failure, not counted under no evidence). "
        "No evidence: answers whose final decision cited no evidence (a pick, counted "
        "in accuracy like any answer). Fallbacks: runs that went on without a model reply they could not use "
        "(see `videoatlas trace RUN`). Costs are over the runs that finished. IoU: mean temporal IoU between "
        "the cells the answer cited and the annotated ranges, over the questions that have ranges (a failed "
        "run or an answer citing nothing: 0).",
        "",
        *_skipped_lines(rep),
        *_table("overall", {"all": rep["overall"]}),
        "",
        "What the GPU spent per question (means over the runs that finished): prompt tokens, split into the "
        "images' (estimated from their sizes) and the text's; those the server's prefix cache served; those it "
        "had to prefill; completion and reasoning tokens; images sent.",
        "",
        *_gpu_table("overall", {"all": rep["overall"]}),
        "",
        *calibration_lines(rep["calibration"]),
        *escalation_lines(rep.get("escalation")),
        *_table("category", rep["categories"]),
    ]
    for axis, values in rep["groups"].items():
        lines += ["", *_table(axis, values)]
    return "\n".join(lines) + "\n"
