"""Accuracy and costs per question kind and per agent, over several evals (``eval report DIR DIR ...``).

A question's kind is its dataset's own field (LVBench question type, Video-MME task type,
LongVideoBench category; EgoSchema has none) or the generator's, as the item carries it in
``categories``; a question with several kinds counts in each, as in the single report. Each eval
folder is one agent's run (its label names the folder, agent and prompt set); ``by`` adds a grouping
axis the items carry (``duration``), so the table reads kind x agent x duration.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from videoatlas.evals.report import EvalData, by_category, iou_text, summarize

NO_AXIS = "-"
"""The group value shown when no grouping axis was asked for, or a question lacks the axis."""


def kinds_by_agent(evals: Sequence[EvalData], by: str | None = None) -> list[dict[str, Any]]:
    """One entry per (kind, group value, eval): who answered, and its summary over those questions.

    Ordered by kind, then group value (as the report orders groups: by mean video length), then the
    evals in the order given.
    """
    cells: dict[tuple[str, str], dict[int, list[dict[str, Any]]]] = {}
    order: dict[str, float] = {}
    for n, data in enumerate(evals):
        for kind, rows in by_category(data.rows).items():
            for row in rows:
                value = str((row.get("groups") or {}).get(by, NO_AXIS)) if by else NO_AXIS
                cells.setdefault((kind, value), {}).setdefault(n, []).append(row)
                order[value] = max(order.get(value, 0.0), float(row.get("duration") or 0.0))
    out = []
    for kind, value in sorted(cells, key=lambda kv: (kv[0], order[kv[1]], kv[1])):
        for n, rows in sorted(cells[(kind, value)].items()):
            data = evals[n]
            out.append(
                {
                    "kind": kind,
                    "group": value,
                    "eval": str(data.folder),
                    "agent": data.metas[0]["agent"],
                    "label": data.label,
                    **summarize(rows),
                }
            )
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def render_kinds(entries: Sequence[dict[str, Any]], by: str | None = None) -> str:
    """The kind x agent (x ``by``) table for people, as Markdown."""
    axis = f" | {by}" if by else ""
    lines = [
        "Per question kind and agent: accuracy over every attempted question (a failed run is wrong), "
        "unanswered: questions the model declined (found no answer; never right), "
        "costs over the runs that finished, grounding where the items mark ranges.",
        "",
        f"| kind{axis} | agent | eval | questions | accuracy | errors | mean tokens | calls | wall | grounding | IoU | "
        "unanswered |",
        "| --- |" + (" --- |" if by else "") + " --- | --- |" + " ---: |" * 9,
    ]
    for e in entries:
        group = f" | {e['group']}" if by else ""
        lines.append(
            f"| {e['kind']}{group} | {e['agent']} | {e['eval']} | {e['questions']} | {_pct(e['accuracy'])} | "
            f"{_pct(e['error_rate'])} | {e['mean_tokens']:,.0f} | {e['mean_calls']:.1f} | {e['mean_wall_s']:.1f} s | "
            f"{_pct(e['grounding_hit_rate'])} | {iou_text(e['mean_iou'])} | {e['declined']} |"
        )
    return "\n".join(lines) + "\n"
