"""An lmms-eval document as one of our questions, and our answer as the text its scorer reads.

Our own tasks (``videoatlas_*``) carry the question whole, as an items-file record, in the document's
:data:`ITEM_FIELD`. lmms-eval's own LongVideoBench, Video-MME and LVBench tasks are read from the fields
their documents have; their video is the file their ``doc_to_visual`` names.

The answer goes back as the choice's letter (an open question: the answer's text), after a reasoning
block naming the run: ``<think>videoatlas run ev-…</think>B``. lmms-eval strips reasoning blocks before
scoring (``--reasoning_tags``, on by default; our tasks set it themselves) and keeps the raw text in
``--log_samples``' ``resps``, so each logged sample names the run ``videoatlas trace`` opens. The block
is lower case and holds no answer letter, so a scorer shown it anyway still finds the letter after it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from videoatlas.errors import BadInputError
from videoatlas.evals.datasets import lvbench
from videoatlas.evals.items import EvalItem
from videoatlas.limits import CHOICE_LETTERS
from videoatlas.runs import RunResult

ITEM_FIELD = "videoatlas_item"
"""The document field our tasks keep the question in (one items-file record as JSON)."""

FAMILIES = ("longvideobench", "videomme", "lvbench")
"""lmms-eval's own tasks whose documents this model reads (by task-name prefix)."""

REASONING_TAGS = [["<think>", "</think>"]]
"""The reasoning block the run id travels in (the form of lmms-eval's ``reasoning_tags``)."""

_LETTER_PREFIX = re.compile(r"^\s*[A-Z][.)]\s*")
_RUN_IN_TEXT = re.compile(r"<think>videoatlas run ([0-9a-z-]+)</think>")
_LVB_PADDING = "N/A"


def _video(task: str, visuals: Sequence[Any]) -> str:
    """The one video file the task's ``doc_to_visual`` names."""
    paths = [v for v in visuals if isinstance(v, str)]
    if len(paths) != 1 or len(paths) != len(visuals):
        raise BadInputError(
            f"task {task}: the videoatlas model takes one video file per question, and this task gives "
            f"{len(visuals)} visual(s) of other kinds (frames or images): use the task's video variant"
        )
    return paths[0]


def _first(doc: Mapping[str, Any], keys: Sequence[str], fallback: str) -> str:
    for key in keys:
        value = doc.get(key)
        if value not in (None, ""):
            return str(value)
    return fallback


def _lmms_doc_item(doc: Mapping[str, Any], task: str, doc_id: int, video: str) -> EvalItem:
    """A question of lmms-eval's own LongVideoBench, Video-MME or LVBench task (no truth: it stays with the task)."""
    family = next((f for f in FAMILIES if task.startswith(f)), None)
    if family is None:
        raise BadInputError(
            f"task {task}: the videoatlas model answers the videoatlas_* tasks and lmms-eval's "
            f"{', '.join(FAMILIES)} tasks (a document of another task has no question and choices it can read)"
        )
    question = str(doc.get("question") or "")
    subtitles: str | None = None
    if family == "videomme":
        choices = [_LETTER_PREFIX.sub("", str(o), count=1) for o in doc.get("options") or []]
        video_id = _first(doc, ("videoID", "video_id"), Path(video).stem)
        srt = Path(video).parent.parent / "subtitle" / f"{video_id}.srt"  # where lmms-eval's subtitle variant reads
        if "subtitle" in task and srt.is_file():
            subtitles = str(srt)
    elif family == "longvideobench":
        options = [doc.get(f"option{i}") for i in range(5)]
        choices = [str(o) for o in options if o is not None and str(o) != _LVB_PADDING]
        video_id = _first(doc, ("video_id",), Path(video).stem)
    else:
        choices = [str(o) for o in doc.get("options") or []]
        if not choices:  # the official form: options inside the question as "(A) ..."
            question, choices = lvbench.split_options(question, f"task {task} document {doc_id}")
        video_id = _first(doc, ("key", "video_id", "videoID"), Path(video).stem)
    if not question.strip():
        raise BadInputError(f"task {task} document {doc_id}: no question")
    return EvalItem(
        dataset=task,
        id=_first(doc, ("question_id", "uid", "id"), str(doc_id)),
        video_id=video_id,
        video=video,
        question=question,
        choices=choices,
        answer_index=None,
        subtitles=subtitles,
    )


def item_of(doc: Mapping[str, Any], task: str, doc_id: int, visuals: Sequence[Any]) -> EvalItem:
    """The question a document asks (``visuals``: what the task's ``doc_to_visual`` returned for it)."""
    raw = doc.get(ITEM_FIELD)
    if raw:
        try:
            data = json.loads(raw)
        except (TypeError, json.JSONDecodeError):
            raise BadInputError(f"task {task} document {doc_id}: {ITEM_FIELD} is not an items-file record") from None
        if not isinstance(data, dict):
            raise BadInputError(f"task {task} document {doc_id}: {ITEM_FIELD} is not an items-file record")
        return EvalItem.from_dict(data)
    return _lmms_doc_item(doc, task, doc_id, _video(task, visuals))


def answer_text(item: EvalItem, result: RunResult) -> str:
    """What the scorer reads: the choice's letter (empty when the agent chose none), or an open answer's text."""
    if not item.choices:
        return result.answer
    return CHOICE_LETTERS[result.answer_index] if result.answer_index is not None else ""


def response(item: EvalItem, result: RunResult) -> str:
    """The model's response to lmms-eval: the run's reasoning block, then the answer."""
    return f"<think>videoatlas run {result.run_id}</think>{answer_text(item, result)}"


def run_of(text: str) -> str | None:
    """The run id a logged response names (None: not one of ours)."""
    found = _RUN_IN_TEXT.search(text)
    return found.group(1) if found else None
