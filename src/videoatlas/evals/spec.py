"""What one evaluation runs: its spec (:class:`EvalSpec`, with its :class:`Shard`) and the items it selects.

The dataset's items are spread over videos, cut to ``--limit`` and dealt out to the shards, so
every shard of one eval holds a fixed, disjoint share; :func:`runnable` refuses, in one line, a
selection the runner could not score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from videoatlas.errors import BadInputError
from videoatlas.evals.datasets import Loaded, load_dataset
from videoatlas.evals.datasets.synthetic import MakingProgress
from videoatlas.evals.items import EvalItem, interleave
from videoatlas.runtime.context import RunConfig
from videoatlas.synth import Style


@dataclass(frozen=True, slots=True)
class Shard:
    """Part ``index`` (0-based) of ``count`` equal parts."""

    index: int = 0
    count: int = 1

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"2/8"`` -> the third of eight shards (shards are numbered from 0)."""
        left, sep, right = text.partition("/")
        if not sep or not left.strip().isdigit() or not right.strip().isdigit():
            raise BadInputError(f"--shard must look like i/n (e.g. 0/4), got {text!r}")
        index, count = int(left), int(right)
        if count < 1 or not 0 <= index < count:
            raise BadInputError(f"--shard {text}: need 0 <= i < n")
        return cls(index, count)

    @property
    def suffix(self) -> str:
        """File-name suffix of this shard's files ('' when unsharded)."""
        return "" if self.count == 1 else f"-shard{self.index}of{self.count}"


@dataclass(slots=True)
class EvalSpec:
    """One evaluation: what to run, how, and where its results go."""

    dataset: str
    root: str
    out: str
    config: RunConfig
    limit: int | None = None
    shard: Shard = field(default_factory=Shard)
    concurrency: int = 4
    durations: Sequence[float] | None = None
    seed: int = 1
    styles: Sequence[Style] | None = None
    """Synthetic suite only: which video styles (default: the suite's own, chapters and broadcast)."""
    db_url: str | None = None
    subtitles: bool = True
    """False: run without the benchmark's subtitles (Video-MME reports both settings)."""
    subset: list[str] | None = None
    """Only these published splits of the benchmark (``--subset``; names checked by ``parse_subset``)."""


def load_selected(spec: EvalSpec, making: MakingProgress | None = None, make: bool = True) -> Loaded:
    """The dataset's items (its ``--subset``) spread over videos, cut to ``--limit``, then this shard's share.

    The skipped records come along, to be counted in ``eval.json`` and the report. The synthetic
    suite draws the videos of this selection only (``making``: the progress each is drawn under);
    with ``make`` False it draws none and names them (``to_make``), for a pre-flight.
    """
    if spec.limit is not None and spec.limit < 1:
        raise BadInputError("--limit must be at least 1")

    def select(items: list[EvalItem]) -> list[EvalItem]:
        spread = interleave(items)[: spec.limit]
        return spread[spec.shard.index :: spec.shard.count]

    loaded = load_dataset(
        spec.dataset,
        spec.root,
        spec.durations,
        spec.seed,
        spec.styles,
        spec.subset,
        select=select,
        making=making,
        make=make,
    )
    mine = loaded.items
    if not spec.subtitles:
        mine = [replace(i, subtitles=None, subtitle_offset=0.0) for i in mine]
    return Loaded(mine, loaded.skipped, loaded.to_make)


def select_items(spec: EvalSpec) -> list[EvalItem]:
    """The items :func:`load_selected` picks, refused when any lacks an answer or a video file."""
    return runnable(load_selected(spec).items)


def runnable(mine: list[EvalItem]) -> list[EvalItem]:
    """``mine``, or a one-line refusal when any question lacks an answer or its video file."""
    unanswerable = [i.id for i in mine if i.answer_index is None and i.choices]
    if unanswerable:
        raise BadInputError(f"{len(unanswerable)} question(s) have no ground-truth answer (first: {unanswerable[0]})")
    missing = sorted({i.video for i in mine if not Path(i.video).is_file()})
    if missing:
        raise BadInputError(f"{len(missing)} video file(s) are missing (first: {missing[0]})")
    return mine


def skipped_summary(loaded: Loaded) -> dict[str, Any]:
    """What ``eval.json`` keeps of the skipped records: each malformed one, and the others by reason."""
    excluded: dict[str, int] = {}
    for s in loaded.skipped:
        if not s.malformed:
            excluded[s.reason] = excluded.get(s.reason, 0) + 1
    return {"malformed": [s.as_dict() for s in loaded.skipped if s.malformed], "excluded": excluded}
