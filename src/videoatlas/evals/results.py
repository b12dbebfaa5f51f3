"""An evaluation's output folder: ``eval.json`` (what was run) and the result lines, one per question.

Each row is keyed by :func:`result_key`, says which agent, code, prompts and model produced it
(the stamp), and carries its question's truth, so a report places a failed run (an ``error`` row)
where its answer would be. Rows are appended and synced one by one (:class:`Appender`): a kill
loses at most the line being written, which :func:`read_rows` then ignores.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from videoatlas.errors import BadInputError
from videoatlas.evals.items import EvalItem
from videoatlas.evals.open_answers import open_match
from videoatlas.evals.spec import EvalSpec
from videoatlas.runs import RunResult
from videoatlas.state.models import former_roles

log = structlog.get_logger(__name__)

RESULT_SCHEMA = 7
"""2: rows carry ``agent_code``, and a failed run's row carries the item's truth and categories;
3: an open question's row carries ``truth_text`` (and ``truth_tolerance``), scored by its own rule;
4: a finished run's row says whether its final decision ``declined`` (found no answer; older rows: not);
5: a finished run's row carries ``tokens_by_role``, its roles as its agent names them (older rows:
``master_tokens`` and ``worker_tokens``, read by :func:`row_tokens_by_role` as the roles ``master`` and ``worker``);
6: a finished run's row carries the server's ``probabilities`` of the choices and the ``confidence`` of its answer
(None when the server gave none; older rows: absent, read as unknown);
7: a finished run's row carries ``escalated`` (whether an escalating agent handed its uniform answer over to a
search agent; None for an agent that does not escalate) and ``path_costs`` (calls and tokens of each path it ran)."""


def result_key(
    item: EvalItem, agent: str, prompt_sha: str, model: str, knobs: dict[str, Any], *, agent_code: str
) -> str:
    """The cache key of one question's result: change any input and the question runs again.

    ``agent_code`` is :meth:`~videoatlas.agents.registry.Agent.code_version` and ``model`` the id the
    endpoint reports, so changed agent code or a changed model (a new stand-in version) re-runs.
    """
    material = {
        "item": item.key_material(),
        "agent": agent,
        "agent_code": agent_code,
        "prompt_sha": prompt_sha,
        "model": model,
        "knobs": knobs,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:32]


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The result lines of one file; a torn last line (a kill mid-write) is ignored with a warning."""
    if not path.is_file():
        return []
    rows = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if n == len(lines):
                log.warning("ignoring an incomplete last result line", file=str(path), line=n)
                continue
            raise BadInputError(f"{path}:{n}: not a result line (invalid JSON)") from None
    return rows


def _item_fields(item: EvalItem, key: str, stamp: dict[str, str], status: str) -> dict[str, Any]:
    """What every row says about its question, so reports place a failed run where its answer would be."""
    return {
        "schema": RESULT_SCHEMA,
        "status": status,
        "key": key,
        **stamp,
        "item": item.id,
        "dataset": item.dataset,
        "video_id": item.video_id,
        "categories": item.categories,
        "groups": item.groups,
        "truth_index": item.answer_index,
        "truth_text": item.answer_text if item.is_open else None,
        "truth_tolerance": item.answer_tolerance,
        "truth_ranges": item.evidence,
    }


def result_row(
    item: EvalItem, key: str, stamp: dict[str, str], result: RunResult, duration: float, source: str
) -> dict[str, Any]:
    """The row of a question whose run finished (``source``: ``run``, ``resumed`` or ``db-cache``).

    A run whose final decision declined (found no answer) is unanswered: never correct, and not a
    parse failure (its reply was read; it said there was no answer).
    """
    cited = [e for e in result.evidence if e.id in result.cited]
    cost = result.cost
    no_answer = result.answer_index is None if item.choices else not result.answer.strip()
    return {
        **_item_fields(item, key, stamp, "ok"),
        "duration": duration,
        "answer": result.answer,
        "answer_index": result.answer_index,
        "declined": result.declined,
        "probabilities": result.probabilities,
        "confidence": result.confidence,
        "correct": not result.declined and answered_right(item, result.answer, result.answer_index),
        "parse_failed": not result.declined and no_answer,
        "grounded": result.grounded,
        "fallbacks": cost.fallbacks,
        "frames_sent": cost.frames_sent,
        "frames_viewed": cost.frames_viewed,
        "audio_s": round(cost.audio_s, 3),
        "transcriptions": cost.transcriptions,
        "transcribe_s": round(cost.transcribe_s, 3),
        "index_frames": int(result.extras.get("index_frames", 0)),
        "index_s": round(float(result.extras.get("index_s", 0.0)), 3),
        **_escalation(result.extras),
        "calls": cost.calls,
        "failed_calls": cost.failed_calls,
        "tokens": cost.tokens,
        "prompt_tokens": cost.prompt_tokens,
        "cached_tokens": cost.cached_tokens,
        "image_tokens": cost.image_tokens,
        "completion_tokens": cost.completion_tokens,
        "reasoning_tokens": cost.reasoning_tokens,
        "images": cost.images,
        "tokens_by_role": dict(cost.tokens_by_role),
        "wall_s": round(result.wall_s, 3),
        "rounds": result.rounds,
        "evidence": len(result.evidence),
        "evidence_times": [round(e.time, 3) for e in result.evidence],
        "cited_times": [round(e.time, 3) for e in cited],
        "cited_ranges": [[round(e.start, 3), round(e.end, 3)] for e in cited],
        "stop_reason": result.stop_reason,
        "run_id": result.run_id,
        "source": source,
        "finished_at": datetime.now(UTC).isoformat(),
    }


def _escalation(extras: Mapping[str, Any]) -> dict[str, Any]:
    """Which path an escalating run took and what each cost (calls, tokens); None and {} for any other run."""
    escalated = extras.get("escalated")
    paths = extras.get("path_costs") or {}
    return {
        "escalated": None if escalated is None else bool(escalated),
        "path_costs": {
            path: {"calls": int(cost["calls"]), "tokens": int(cost["tokens"])}
            for path, cost in paths.items()
            if cost is not None
        },
    }


def row_tokens_by_role(row: Mapping[str, Any]) -> dict[str, int]:
    """A finished run's tokens by role: its ``tokens_by_role``, or a row from before schema 5 read as a mapping.

    Such a row has ``master_tokens`` and ``worker_tokens`` (Video-RLM's two roles, every agent's calls counted
    under one of them): they read as the roles ``master`` and ``worker``, a role that spent nothing left out.
    A failed run's row has none ({}).
    """
    if "tokens_by_role" in row:
        return {str(role): int(tokens) for role, tokens in (row["tokens_by_role"] or {}).items()}
    return former_roles(row)


def answered_right(item: EvalItem, answer: str, answer_index: int | None) -> bool:
    """The one scoring rule: the chosen index is the truth, or an open reply is the value (:func:`open_match`)."""
    if not item.answerable:
        return False
    if item.is_open:
        return open_match(answer, str(item.answer_text), item.answer_tolerance)
    return answer_index == item.answer_index


def error_row(item: EvalItem, key: str, stamp: dict[str, str], run_id: str, exc: Exception) -> dict[str, Any]:
    """The row of a question whose run failed: scored as a wrong answer, never reused."""
    return {
        **_item_fields(item, key, stamp, "error"),
        "duration": item.duration,
        "answer_index": None,
        "correct": False,
        "parse_failed": False,
        "error": f"{type(exc).__name__}: {exc}"[:1000],
        "run_id": run_id,
        "finished_at": datetime.now(UTC).isoformat(),
    }


def interrupted_row(item: EvalItem, key: str, stamp: dict[str, str], run_id: str, exc: Exception) -> dict[str, Any]:
    """The row of a question whose run an outage stopped: not scored (the question did nothing wrong), never reused."""
    return {
        **_item_fields(item, key, stamp, "interrupted"),
        "duration": item.duration,
        "error": f"{type(exc).__name__}: {exc}"[:1000],
        "run_id": run_id,
        "finished_at": datetime.now(UTC).isoformat(),
    }


def _cut_torn_tail(path: Path) -> None:
    """Cut a last line without its newline (a kill mid-write), which :func:`read_rows` already ignores.

    Left there, the next row would run into it: that row read as torn in its turn, and the one after it
    made the file unreadable.
    """
    if not path.is_file():
        return
    with path.open("rb+") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            log.warning("cutting an incomplete last result line before appending", file=str(path))
            f.truncate(data.rfind(b"\n") + 1)


class Appender:
    """Appends result lines to one file, each flushed and synced before the next question counts."""

    def __init__(self, path: Path) -> None:
        self.path = path
        _cut_torn_tail(path)
        self.fh = path.open("a", encoding="utf-8")

    def write(self, row: dict[str, Any]) -> None:
        """Append ``row`` as one line, on disk before this returns (keys starting with ``_`` are not written)."""
        self.fh.write(json.dumps({k: v for k, v in row.items() if not k.startswith("_")}) + "\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def close(self) -> None:
        """Close the file."""
        self.fh.close()


def write_meta(path: Path, meta: dict[str, Any]) -> None:
    """Write ``eval.json`` whole or not at all (a partial file, then a rename)."""
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)


def check_folder(out: Path, spec: EvalSpec) -> None:
    """Refuse a folder that already holds an eval of another dataset (or an unreadable ``eval.json``)."""
    for meta_file in out.glob("eval*.json"):
        try:
            other = json.loads(meta_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            raise BadInputError(f"{meta_file} is not valid JSON; move it away or give a new --out") from None
        if other.get("dataset") != spec.dataset:
            raise BadInputError(
                f"{out} already holds an eval of {other.get('dataset')!r}; give a new --out for {spec.dataset!r}"
            )
