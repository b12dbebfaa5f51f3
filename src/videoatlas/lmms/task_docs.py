"""The documents of our lmms-eval tasks, from files on disk (no hub download): each carries its question whole.

``videoatlas_jsonl`` reads an items file (our JSONL format). The ``videoatlas_longvideobench_val``,
``videoatlas_videomme`` and ``videoatlas_lvbench`` tasks read a benchmark's local copy in its official
layout with our dataset adapters (:mod:`videoatlas.evals.datasets`, the same questions ``videoatlas eval
run`` asks), and give each question the fields lmms-eval's own task of that benchmark reads, so that
task's prompt, scorer and aggregation score it unchanged.

Where the files are: the task's ``dataset_kwargs`` (``items:`` or ``root:``, in a task YAML of your own),
else an environment variable (:data:`ENV`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from videoatlas.errors import BadInputError
from videoatlas.evals.datasets import jsonl, load_items, longvideobench, lvbench, parse_subset, videomme
from videoatlas.evals.items import EvalItem
from videoatlas.limits import CHOICE_LETTERS
from videoatlas.lmms.docs import ITEM_FIELD

ENV = {
    jsonl.NAME: "VIDEOATLAS_LMMS_ITEMS",
    longvideobench.NAME: "VIDEOATLAS_LMMS_LONGVIDEOBENCH",
    videomme.NAME: "VIDEOATLAS_LMMS_VIDEOMME",
    lvbench.NAME: "VIDEOATLAS_LMMS_LVBENCH",
}
"""The environment variable naming each dataset's file or folder when the task's YAML does not."""

_LVB_OPTIONS = 5
_LVB_PADDING = "N/A"


def data_path(dataset: str, task: str, dataset_kwargs: Mapping[str, Any] | None) -> Path:
    """Where ``task`` reads ``dataset``: its ``dataset_kwargs`` (``items`` or ``root``), else :data:`ENV`."""
    given = dict(dataset_kwargs or {})
    key = "items" if dataset == jsonl.NAME else "root"
    value = given.get(key) or os.environ.get(ENV[dataset], "")
    if not str(value).strip():
        what = "an items .jsonl file" if dataset == jsonl.NAME else f"the folder of a local {dataset} copy"
        raise BadInputError(
            f"task {task}: set {ENV[dataset]} to {what} (or give dataset_kwargs: {{{key}: PATH}} in a task YAML)"
        )
    path = Path(str(value)).expanduser()
    if not path.exists():
        raise BadInputError(f"task {task}: {path} does not exist")
    return path


def _with_item(doc: dict[str, Any], item: EvalItem) -> dict[str, Any]:
    return {**doc, ITEM_FIELD: json.dumps(item.as_dict())}


def items_docs(path: Path) -> list[dict[str, Any]]:
    """``videoatlas_jsonl``'s documents: each record of the items file, with a few fields shown plainly."""
    docs = []
    for item in jsonl.load(path):
        truth = CHOICE_LETTERS[item.answer_index] if item.answer_index is not None and item.choices else ""
        shown = {"id": item.id, "video": item.video, "question": item.question, "choices": item.choices}
        docs.append(_with_item({**shown, "answer": truth}, item))
    return docs


def _letter(item: EvalItem) -> str:
    if item.answer_index is None:
        raise BadInputError(f"question {item.id} has no answer: lmms-eval's scorer needs one")
    return CHOICE_LETTERS[item.answer_index]


def _longvideobench_doc(item: EvalItem) -> dict[str, Any]:
    """A question as lmms-eval's LongVideoBench task reads it (the Hugging Face form: option0..option4)."""
    if len(item.choices) > _LVB_OPTIONS:
        raise BadInputError(f"question {item.id}: more than {_LVB_OPTIONS} candidates")
    options = item.choices + [_LVB_PADDING] * (_LVB_OPTIONS - len(item.choices))
    group = item.groups.get("duration_group", "")
    return {
        "id": item.id,
        "video_id": item.video_id,
        "video_path": item.video,
        "question": item.question,
        **{f"option{i}": option for i, option in enumerate(options)},
        "correct_choice": item.answer_index,
        "duration_group": int(group) if group.isdigit() else group,
        "question_category": item.categories[0] if item.categories else "unknown",
        "duration": item.duration,
    }


def _lvbench_doc(item: EvalItem) -> dict[str, Any]:
    """A question as lmms-eval's LVBench task reads it (options apart from the question)."""
    return {
        "uid": item.id,
        "key": item.video_id,
        "video_path": item.video,
        "question": item.question,
        "options": item.choices,
        "answer": _letter(item),
        "question_type": item.categories,
    }


def _videomme_rows(root: Path) -> dict[str, dict[str, Any]]:
    """The official parquet rows (lmms-eval's Video-MME documents are these rows), by question id."""
    files = sorted(root.glob("*.parquet")) + sorted(root.glob("videomme/*.parquet"))
    rows: dict[str, dict[str, Any]] = {}
    for path in files:
        for row in pq.read_table(path).to_pylist():
            rows[str(row.get("question_id"))] = row
    return rows


def benchmark_docs(dataset: str, root: Path, subset: str | None = None) -> list[dict[str, Any]]:
    """The documents of a benchmark's local copy at ``root``, read by our adapter (``subset``: its ``--subset``)."""
    items = load_items(dataset, root, subset=parse_subset(dataset, subset))
    if dataset == longvideobench.NAME:
        return [_with_item(_longvideobench_doc(item), item) for item in items]
    if dataset == lvbench.NAME:
        return [_with_item(_lvbench_doc(item), item) for item in items]
    if dataset == videomme.NAME:
        rows = _videomme_rows(root)
        return [_with_item(rows[item.id], item) for item in items]
    raise BadInputError(f"no lmms-eval task reads {dataset}")
