"""Dataset adapters: each reads one benchmark's official annotation files into :class:`EvalItem`s.

A record that cannot become a question is skipped with its file, id and reason (:class:`Skipped`),
and the rest is read; ``eval check`` lists them and the report counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypedDict, Unpack

import structlog

from videoatlas.errors import BadInputError
from videoatlas.evals.datasets import egoschema, jsonl, longvideobench, lvbench, synthetic, videomme
from videoatlas.evals.datasets._common import Loaded, Skipped
from videoatlas.evals.items import EvalItem
from videoatlas.synth import Style

__all__ = ["DATASETS", "SUBSETS", "Loaded", "Skipped", "load_dataset", "load_items", "parse_subset"]

log = structlog.get_logger(__name__)

DATASETS = (
    longvideobench.NAME,
    videomme.NAME,
    lvbench.NAME,
    egoschema.NAME,
    synthetic.NAME,
    jsonl.NAME,
)

SUBSETS: dict[str, tuple[str, ...]] = {
    videomme.NAME: videomme.DURATIONS,
    longvideobench.NAME: longvideobench.DURATION_GROUPS,
    lvbench.NAME: tuple(lvbench.QUESTION_TYPES),
    synthetic.NAME: synthetic.KINDS,
}
"""Each benchmark's published splits, the names ``--subset`` takes (comma-separated for several); for the
synthetic suite, its question kinds."""


def parse_subset(name: str, text: str | None) -> list[str] | None:
    """The subset names of ``--subset`` (canonical spelling), or a one-line error listing the valid ones."""
    if text is None:
        return None
    valid = SUBSETS.get(name)
    if valid is None:
        raise BadInputError(f"--subset: {name} has no published subsets (those with subsets: {', '.join(SUBSETS)})")
    lookup = {v.lower(): v for v in valid}
    if name == lvbench.NAME:
        lookup.update({full: short for short, full in lvbench.QUESTION_TYPES.items()})
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n.lower() not in lookup]
    if unknown or not names:
        raise BadInputError(f"--subset {text!r} is not a subset of {name}; choose from {', '.join(valid)}")
    return sorted({lookup[n.lower()] for n in names}, key=valid.index)


def _in_subset(name: str, item: EvalItem, subset: Sequence[str]) -> bool:
    if name == videomme.NAME:
        return item.groups.get("duration") in subset
    if name == longvideobench.NAME:
        return item.groups.get("duration_group") in subset
    wanted = {lvbench.QUESTION_TYPES.get(s, s).lower() for s in subset} | {s.lower() for s in subset}
    return any(c.lower() in wanted for c in item.categories)


def load_dataset(
    name: str,
    root: str | Path,
    durations: Sequence[float] | None = None,
    seed: int = 1,
    styles: Sequence[Style] | None = None,
    subset: Sequence[str] | None = None,
    select: Callable[[list[EvalItem]], list[EvalItem]] | None = None,
    making: synthetic.MakingProgress | None = None,
) -> Loaded:
    """Dataset ``name`` under ``root``: its items (``subset``'s only, when given) and the skipped records.

    ``select``: which of them to keep (``--limit``, a shard), applied before the synthetic suite draws
    the videos of those it kept, and only those (``making``: the progress each is drawn under).
    ``durations``, ``seed``, ``styles``: the synthetic suite only. An error when no question is left.
    """
    path = Path(root).expanduser()
    if name != synthetic.NAME and not path.exists():
        raise BadInputError(f"{name}: dataset root {path} does not exist")
    if name == longvideobench.NAME:
        loaded = longvideobench.load(path)
    elif name == videomme.NAME:
        loaded = videomme.load(path)
    elif name == lvbench.NAME:
        loaded = lvbench.load(path)
    elif name == egoschema.NAME:
        loaded = egoschema.load(path)
    elif name == synthetic.NAME:
        loaded = Loaded(
            synthetic.load(path, durations or synthetic.DEFAULT_DURATIONS, seed, styles or synthetic.DEFAULT_STYLES)
        )
    elif name == jsonl.NAME:
        loaded = Loaded(jsonl.load(path))
    else:
        raise BadInputError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")
    if subset is not None:
        loaded.items = [i for i in loaded.items if _in_subset(name, i, subset)]
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
    if name == synthetic.NAME:
        synthetic.make_videos(path, loaded.items, seed, making)
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
