"""The record each adapter declares in its own module (``ADAPTER``): what the table of datasets knows of it.

The package's :data:`~videoatlas.evals.datasets.ADAPTERS` lists these records; a benchmark's name,
how it is read, its published splits and how an item is found in one are all here, so adding a
dataset touches its own module and one line of that table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from videoatlas.evals.datasets._common import Loaded, VideoToMake
from videoatlas.evals.items import EvalItem
from videoatlas.synth import Progress, Style

MakingProgress = Callable[[str], AbstractContextManager[Progress]]
"""A video's label (``synthetic 10min broadcast``) -> the progress it is drawn under (a bar, lines)."""


@dataclass(frozen=True, slots=True)
class SuiteOptions:
    """How a generated suite is planned (``--durations``, ``--seed``, ``--styles``); read benchmarks ignore it."""

    durations: Sequence[float] | None = None
    """None: the suite's own lengths."""
    seed: int = 1
    styles: Sequence[Style] | None = None
    """None: the suite's own styles."""


SubsetRule = Callable[[EvalItem, Sequence[str]], bool]
"""Whether an item is in any of these subsets (``--subset``'s names)."""


def in_categories(item: EvalItem, subset: Sequence[str]) -> bool:
    """The default rule: a subset is a question kind, one of the item's ``categories`` (any case)."""
    wanted = {s.lower() for s in subset}
    return any(c.lower() in wanted for c in item.categories)


def in_group(key: str) -> SubsetRule:
    """The rule of a benchmark whose subsets are the values of one of its items' ``groups`` (``duration``)."""

    def rule(item: EvalItem, subset: Sequence[str]) -> bool:
        return item.groups.get(key) in subset

    rule.__name__ = f"in_group_{key}"
    return rule


def reads(load: Callable[[Path], Loaded]) -> Callable[[Path, SuiteOptions], Loaded]:
    """The loader of a benchmark read from its files under ``--root`` (no suite options)."""

    def read(root: Path, options: SuiteOptions) -> Loaded:
        return load(root)

    read.__name__ = f"reads_{getattr(load, '__name__', 'load')}"
    return read


@dataclass(frozen=True, slots=True)
class Adapter:
    """One dataset: its name, how it is loaded, its published splits and the rule that picks them."""

    name: str
    """The name ``--dataset`` takes (the adapter's ``NAME``)."""
    load: Callable[[Path, SuiteOptions], Loaded]
    """The dataset under ``--root``: its questions and the records it skipped."""
    subsets: tuple[str, ...] = ()
    """Its published splits, the names ``--subset`` takes (canonical spelling); none: ``--subset`` is refused."""
    aliases: Mapping[str, str] = field(default_factory=dict)
    """Other spellings ``--subset`` takes (lower case) -> the subset's name (LVBench's full question types)."""
    in_subset: SubsetRule = in_categories
    """Whether an item is in the subsets asked for."""
    generated: bool = False
    """True: the suite is made under ``--root`` (which need not exist yet), not read from it."""
    make_videos: Callable[[Path, Sequence[EvalItem], SuiteOptions, MakingProgress | None], None] | None = None
    """Draw the videos of the items kept (after ``--limit`` and sharding), for a generated suite."""
    to_make: Callable[[Path, Sequence[EvalItem], SuiteOptions], list[VideoToMake]] | None = None
    """The videos of the items kept that ``make_videos`` would draw (not made yet, or left half made), drawing none."""
