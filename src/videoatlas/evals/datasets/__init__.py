"""Dataset adapters: each reads one benchmark's official annotation files into :class:`EvalItem`s.

A record that cannot become a question is skipped with its file, id and reason (:class:`Skipped`),
and the rest is read; ``eval check`` lists them and the report counts them.

Each adapter module declares its record, ``ADAPTER`` (:class:`~videoatlas.evals.datasets.adapter.Adapter`:
its name, loader, published splits and the rule that picks them); this module is the table of those
records (:data:`ADAPTERS`) and the lookups every caller goes through.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypedDict, Unpack

import structlog

from videoatlas.errors import BadInputError
from videoatlas.evals.datasets import egoschema, jsonl, longvideobench, lvbench, synthetic, videomme
from videoatlas.evals.datasets._common import Loaded, Skipped, VideoToMake
from videoatlas.evals.datasets.adapter import Adapter, MakingProgress, SuiteOptions
from videoatlas.evals.items import EvalItem
from videoatlas.synth import Style

__all__ = [
    "ADAPTERS",
    "DATASETS",
    "SUBSETS",
    "Adapter",
    "Loaded",
    "Skipped",
    "VideoToMake",
    "get_adapter",
    "load_dataset",
    "load_items",
    "parse_subset",
]

log = structlog.get_logger(__name__)

ADAPTERS: dict[str, Adapter] = {
    adapter.name: adapter
    for adapter in (
        longvideobench.ADAPTER,
        videomme.ADAPTER,
        lvbench.ADAPTER,
        egoschema.ADAPTER,
        synthetic.ADAPTER,
        jsonl.ADAPTER,
    )
}
"""Dataset name -> the record its adapter declares (in ``--dataset``'s order)."""

DATASETS = tuple(ADAPTERS)
"""The names ``--dataset`` takes."""

SUBSETS: dict[str, tuple[str, ...]] = {name: adapter.subsets for name, adapter in ADAPTERS.items() if adapter.subsets}
"""Each benchmark's published splits, the names ``--subset`` takes (comma-separated for several); for the
synthetic suite, its question kinds."""


def get_adapter(name: str) -> Adapter:
    """The adapter of dataset ``name``, or a one-line error listing the known ones."""
    try:
        return ADAPTERS[name]
    except KeyError:
        raise BadInputError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}") from None


def parse_subset(name: str, text: str | None) -> list[str] | None:
    """The subset names of ``--subset`` (canonical spelling), or a one-line error listing the valid ones."""
    if text is None:
        return None
    adapter = ADAPTERS.get(name)
    if adapter is None or not adapter.subsets:
        raise BadInputError(f"--subset: {name} has no published subsets (those with subsets: {', '.join(SUBSETS)})")
    valid = adapter.subsets
    lookup = {v.lower(): v for v in valid} | {k.lower(): v for k, v in adapter.aliases.items()}
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n.lower() not in lookup]
    if unknown or not names:
        raise BadInputError(f"--subset {text!r} is not a subset of {name}; choose from {', '.join(valid)}")
    return sorted({lookup[n.lower()] for n in names}, key=valid.index)


def load_dataset(
    name: str,
    root: str | Path,
    durations: Sequence[float] | None = None,
    seed: int = 1,
    styles: Sequence[Style] | None = None,
    subset: Sequence[str] | None = None,
    select: Callable[[list[EvalItem]], list[EvalItem]] | None = None,
    making: MakingProgress | None = None,
    make: bool = True,
) -> Loaded:
    """Dataset ``name`` under ``root``: its items (``subset``'s only, when given) and the skipped records.

    ``select``: which of them to keep (``--limit``, a shard), applied before the synthetic suite draws
    the videos of those it kept, and only those (``making``: the progress each is drawn under).
    ``make``: False draws none (``eval check``); the result's ``to_make`` names those still to draw.
    ``durations``, ``seed``, ``styles``: the synthetic suite only. An error when no question is left.
    """
    adapter = get_adapter(name)
    path = Path(root).expanduser()
    if not adapter.generated and not path.exists():
        raise BadInputError(f"{name}: dataset root {path} does not exist")
    options = SuiteOptions(durations, seed, styles)
    loaded = adapter.load(path, options)
    if subset is not None:
        loaded.items = [i for i in loaded.items if adapter.in_subset(i, subset)]
    ids = [i.id for i in loaded.items]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise BadInputError(f"{name}: question id {dup!r} appears more than once")
    if not loaded.items:
        broken = [s for s in loaded.skipped if s.malformed]
        why = f" ({len(broken)} record(s) malformed; first: {broken[0].reason})" if broken else ""
        where = f" in subset {','.join(subset)}" if subset is not None else ""
        raise BadInputError(f"{name}: no questions found{where} under {path}{why}")
    if select is not None:
        loaded.items = select(loaded.items)
    if make and adapter.make_videos is not None:
        adapter.make_videos(path, loaded.items, options, making)
    if adapter.to_make is not None:
        loaded.to_make = adapter.to_make(path, loaded.items, options)
    return loaded


class LoadOptions(TypedDict, total=False):
    """:func:`load_dataset`'s options, as :func:`load_items` passes them on."""

    durations: Sequence[float] | None
    seed: int
    styles: Sequence[Style] | None
    subset: Sequence[str] | None


def load_items(name: str, root: str | Path, **options: Unpack[LoadOptions]) -> list[EvalItem]:
    """The items of :func:`load_dataset`; malformed records are logged (``eval check`` lists them)."""
    loaded = load_dataset(name, root, **options)
    broken = [s for s in loaded.skipped if s.malformed]
    if broken:
        log.warning("malformed records skipped", dataset=name, count=len(broken), first=broken[0].reason)
    return loaded.items
