"""Dataset adapters: each reads one benchmark's official annotation files into :class:`EvalItem`s."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from videoatlas.errors import BadInputError
from videoatlas.evals.datasets import egoschema, jsonl, longvideobench, lvbench, synthetic, videomme
from videoatlas.evals.items import EvalItem
from videoatlas.synth import Style

DATASETS = (
    longvideobench.NAME,
    videomme.NAME,
    lvbench.NAME,
    egoschema.NAME,
    synthetic.NAME,
    jsonl.NAME,
)


def load_items(
    name: str,
    root: str | Path,
    durations: Sequence[float] | None = None,
    seed: int = 1,
    styles: Sequence[Style] | None = None,
) -> list[EvalItem]:
    """All items of dataset ``name`` under ``root`` (``durations``, ``seed``, ``styles``: the synthetic suite only)."""
    path = Path(root).expanduser()
    if name != synthetic.NAME and not path.exists():
        raise BadInputError(f"{name}: dataset root {path} does not exist")
    if name == longvideobench.NAME:
        items = longvideobench.load(path)
    elif name == videomme.NAME:
        items = videomme.load(path)
    elif name == lvbench.NAME:
        items = lvbench.load(path)
    elif name == egoschema.NAME:
        items = egoschema.load(path)
    elif name == synthetic.NAME:
        items = synthetic.load(path, durations or synthetic.DEFAULT_DURATIONS, seed, styles or synthetic.DEFAULT_STYLES)
    elif name == jsonl.NAME:
        items = jsonl.load(path)
    else:
        raise BadInputError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")
    ids = [i.id for i in items]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise BadInputError(f"{name}: question id {dup!r} appears more than once")
    if not items:
        raise BadInputError(f"{name}: no questions found under {path}")
    return items
