"""Our lmms-eval tasks (``--include_path`` the folder ``python -m videoatlas.lmms`` prints).

Each is a Python task class named by a YAML file in ``task_yaml/``; a YAML of your own with the same
``class`` and a ``dataset_kwargs`` of its own points one at other files (see ``docs/lmms-eval.md``).

* ``videoatlas_jsonl`` (:class:`ItemsTask`): an items file; scored here, by lmms-eval's multiple-choice
  letter extraction: ``accuracy`` over the questions with an answer, and ``parse_failed``.
* ``videoatlas_longvideobench_val``, ``videoatlas_videomme``, ``videoatlas_lvbench`` (:class:`BenchmarkTask`):
  a local copy of the benchmark, scored by lmms-eval's own task of it: its YAML (prompt, split, scorer,
  aggregation) as installed, with only where its documents and videos come from replaced.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, ClassVar

import datasets
import lmms_eval.tasks
from lmms_eval.api.task import ConfigurableTask
from lmms_eval.tasks._task_utils.mcq_extract import extract_mcq_answer
from lmms_eval.utils import load_yaml_config

from videoatlas.errors import VideoAtlasError
from videoatlas.evals.datasets import jsonl, longvideobench, lvbench, videomme
from videoatlas.evals.items import EvalItem
from videoatlas.limits import CHOICE_LETTERS
from videoatlas.lmms.docs import ITEM_FIELD, REASONING_TAGS
from videoatlas.lmms.task_docs import benchmark_docs, data_path, items_docs

__all__ = ["BenchmarkTask", "ItemsTask", "LVBenchTask", "LongVideoBenchTask", "VideoMMETask"]


def doc_video(doc: dict[str, Any]) -> list[str]:
    """``doc_to_visual`` of our tasks: the question's video file."""
    return [str(json.loads(doc[ITEM_FIELD])["video"])]


def _item(doc: dict[str, Any]) -> EvalItem:
    return EvalItem.from_dict(json.loads(doc[ITEM_FIELD]))


def items_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """``doc_to_text`` of ``videoatlas_jsonl`` (for models other than ours, which read the question whole)."""
    kwargs = lmms_eval_specific_kwargs or {}
    item = _item(doc)
    lines = [item.question, *(f"{CHOICE_LETTERS[i]}. {choice}" for i, choice in enumerate(item.choices))]
    return f"{kwargs.get('pre_prompt', '')}{chr(10).join(lines)}{kwargs.get('post_prompt', '')}"


def items_target(doc: dict[str, Any]) -> str:
    """``doc_to_target``: the answer's letter ("" when the item has none)."""
    return str(doc["answer"])


def items_results(doc: dict[str, Any], results: list[str]) -> dict[str, float | None]:
    """``process_results``: right or wrong by the letter lmms-eval's extractor finds (None: not scored)."""
    item = _item(doc)
    if not item.choices or item.answer_index is None:
        return {"accuracy": None, "parse_failed": None}
    letter = extract_mcq_answer(results[0], choices=list(CHOICE_LETTERS[: len(item.choices)]))
    return {"accuracy": float(letter == CHOICE_LETTERS[item.answer_index]), "parse_failed": float(letter == "")}


def mean_scored(values: list[float | None]) -> float:
    """Aggregation: the mean over the scored questions (NaN when none is)."""
    scored = [v for v in values if v is not None]
    return sum(scored) / len(scored) if scored else math.nan


POST_PROMPT = "\nAnswer with the option's letter from the given choices directly."
"""What ``videoatlas_jsonl`` asks other models for after the choices (LongVideoBench's words)."""

ITEMS_CONFIG: dict[str, Any] = {
    "output_type": "generate_until",
    "test_split": "test",
    "doc_to_visual": doc_video,
    "doc_to_text": items_text,
    "doc_to_target": items_target,
    "process_results": items_results,
    "metric_list": [
        {"metric": "accuracy", "aggregation": mean_scored, "higher_is_better": True},
        {"metric": "parse_failed", "aggregation": mean_scored, "higher_is_better": False},
    ],
    "generation_kwargs": {"max_new_tokens": 16, "temperature": 0, "do_sample": False},
    "lmms_eval_specific_kwargs": {"default": {"pre_prompt": "", "post_prompt": POST_PROMPT}},
    "reasoning_tags": REASONING_TAGS,
    "metadata": {"version": 1.0},
}


def _given(config: dict[str, Any] | None) -> dict[str, Any]:
    """A python task's YAML as lmms-eval hands it over, without the ``class`` key (not a task setting)."""
    return {k: v for k, v in (config or {}).items() if k != "class"}


def _dataset(split: str, docs: list[dict[str, Any]]) -> datasets.DatasetDict:
    return datasets.DatasetDict({split: datasets.Dataset.from_list(docs)})


class ItemsTask(ConfigurableTask):  # type: ignore[misc]
    """``videoatlas_jsonl``: the questions of an items file."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        given = _given(config)
        task = str(given.get("task", "videoatlas_jsonl"))
        try:
            path = data_path(jsonl.NAME, task, given.get("dataset_kwargs"))
            super().__init__(config={**ITEMS_CONFIG, **given, "dataset_path": str(path), "dataset_kwargs": None})
        except VideoAtlasError as exc:
            raise exc.with_traceback(None) from None  # lmms-eval prints the traceback: only this frame of ours

    def download(self, dataset_kwargs: dict[str, Any] | None = None) -> None:
        """Read the items file (lmms-eval would ask the hub)."""
        self.dataset = _dataset(self.config.test_split, items_docs(Path(self.config.dataset_path)))
        self.dataset_no_image = self.dataset


class BenchmarkTask(ConfigurableTask):  # type: ignore[misc]
    """lmms-eval's own task of a benchmark, over a local copy in the benchmark's official layout."""

    DATASET: ClassVar[str]
    """Our adapter's name (:mod:`videoatlas.evals.datasets`)."""
    OFFICIAL: ClassVar[str]
    """lmms-eval's YAML of the benchmark, under ``lmms_eval/tasks/``."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        given = _given(config)
        task = str(given.get("task", self.OFFICIAL))
        kwargs = dict(given.pop("dataset_kwargs", None) or {})
        official = load_yaml_config(str(Path(lmms_eval.tasks.__file__).parent / self.OFFICIAL), mode="full")
        try:
            root = data_path(self.DATASET, task, kwargs)
            self._subset = kwargs.get("subset")
            mine = {"dataset_path": str(root), "dataset_kwargs": None, "doc_to_visual": doc_video}
            super().__init__(config={**official, **given, **mine, "reasoning_tags": REASONING_TAGS})
        except VideoAtlasError as exc:
            raise exc.with_traceback(None) from None

    def download(self, dataset_kwargs: dict[str, Any] | None = None) -> None:
        """Read the local copy with our adapter (lmms-eval would ask the hub)."""
        split = self.config.test_split or self.config.validation_split
        docs = benchmark_docs(self.DATASET, Path(self.config.dataset_path), self._subset)
        self.dataset = _dataset(split, docs)
        self.dataset_no_image = self.dataset


class LongVideoBenchTask(BenchmarkTask):
    """``videoatlas_longvideobench_val``: lmms-eval's ``longvideobench_val_v`` over ``lvb_val.json`` or the parquet."""

    DATASET = longvideobench.NAME
    OFFICIAL = "longvideobench/longvideobench_val_v.yaml"


class VideoMMETask(BenchmarkTask):
    """``videoatlas_videomme``: lmms-eval's ``videomme`` over ``videomme/test-*.parquet`` and ``data/``."""

    DATASET = videomme.NAME
    OFFICIAL = "videomme/videomme.yaml"


class LVBenchTask(BenchmarkTask):
    """``videoatlas_lvbench``: lmms-eval's ``lvbench`` over ``video_info.meta.jsonl`` and the videos."""

    DATASET = lvbench.NAME
    OFFICIAL = "lvbench/lvbench.yaml"
