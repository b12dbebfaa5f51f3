"""One evaluation question, whatever benchmark it comes from, and the answer-letter helpers."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from videoatlas.errors import BadInputError
from videoatlas.limits import CHOICE_LETTERS


@dataclass(frozen=True, slots=True)
class EvalItem:
    """A question about one video, with its answer and what the benchmark groups it by."""

    dataset: str
    id: str
    """Unique within the dataset."""
    video_id: str
    """Questions on the same video share it (the bootstrap resamples videos, not questions)."""
    video: str
    """Path of the video file or concatenation manifest."""
    question: str
    choices: list[str]
    answer_index: int | None
    """None when the split has no public answers (such items cannot be scored)."""
    categories: list[str] = field(default_factory=list)
    """Every category the benchmark counts the question in (LVBench: possibly several)."""
    groups: dict[str, str] = field(default_factory=dict)
    """Other reporting axes, e.g. ``{"duration": "long"}``."""
    duration: float | None = None
    """Video length in seconds when the annotation states it."""
    subtitles: str | None = None
    subtitle_offset: float = 0.0
    """Seconds added to every subtitle time to put it on the video's clock."""
    evidence: list[list[float]] = field(default_factory=list)
    """Ground-truth time ranges ``[start, end]`` (seconds) where the benchmark gives them."""
    answer_text: str | None = None
    """The value an open question (no choices) asks for, scored by :mod:`videoatlas.evals.open_answers`;
    several accepted forms are separated by ``|``. None for a multiple-choice question."""
    answer_tolerance: float = 0.0
    """How far a numeric open answer (a count, a time in seconds) may lie from ``answer_text``."""

    @property
    def is_open(self) -> bool:
        """A question without choices: the reply is the value asked for."""
        return not self.choices

    @property
    def answerable(self) -> bool:
        """Whether the question has a known answer to score against."""
        return self.answer_text is not None if self.is_open else self.answer_index is not None

    def as_dict(self) -> dict[str, Any]:
        """Plain data (one line of an items JSONL file)."""
        return asdict(self)

    def key_material(self) -> dict[str, Any]:
        """What a result key hashes of the question: the fields that change the run, not how it is reported.

        The open-answer fields are left out while they hold their defaults, so the keys of
        multiple-choice questions stay what they were before open answers existed.
        """
        data = {k: v for k, v in self.as_dict().items() if k not in ("categories", "groups")}
        if data["answer_text"] is None and not data["answer_tolerance"]:
            del data["answer_text"], data["answer_tolerance"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalItem:
        """The inverse of :meth:`as_dict`; a clear error for a malformed record."""
        try:
            return cls(**data)
        except TypeError as exc:
            raise BadInputError(f"malformed evaluation item {data.get('id', '?')!r}: {exc}") from None


def letter_index(letter: str, n_choices: int, where: str) -> int:
    """``"C"`` -> 2, checked against the number of choices."""
    text = letter.strip().upper()
    if len(text) != 1 or text not in CHOICE_LETTERS[:n_choices]:
        raise BadInputError(f"{where}: answer {letter!r} is not one of {CHOICE_LETTERS[:n_choices]}")
    return CHOICE_LETTERS.index(text)


def resolve(root: Path, relative: str | os.PathLike[str]) -> str:
    """A path from an annotation file, resolved against the dataset root."""
    p = Path(relative)
    return str(p if p.is_absolute() else root / p)


def write_items(path: str | os.PathLike[str], items: Iterable[EvalItem]) -> Path:
    """Write items as JSONL (the format of the ``jsonl`` dataset and of long variants)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".partial")
    with tmp.open("w", encoding="utf-8") as fh:
        for item in items:
            fh.write(json.dumps(item.as_dict()) + "\n")
    tmp.replace(p)
    return p


def _round_robin(groups: Sequence[Sequence[EvalItem]]) -> list[EvalItem]:
    out: list[EvalItem] = []
    for depth in range(max((len(g) for g in groups), default=0)):
        out.extend(g[depth] for g in groups if depth < len(g))
    return out


def interleave(items: Sequence[EvalItem]) -> list[EvalItem]:
    """Items round-robin over videos, and within a video over categories, in a stable order.

    So ``--limit N`` samples many videos and every kind of question, not the first video's first kind.
    """
    by_video: dict[str, dict[str, list[EvalItem]]] = {}
    for item in items:
        first = item.categories[0] if item.categories else ""
        by_video.setdefault(item.video_id, {}).setdefault(first, []).append(item)
    return _round_robin([_round_robin(list(cats.values())) for cats in by_video.values()])
