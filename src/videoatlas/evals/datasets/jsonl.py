"""Items in our own JSONL format (one :class:`EvalItem` per line): long variants and custom sets.

``--root`` is the file itself or a folder holding ``items.jsonl``; relative video and subtitle paths
are resolved against the file's folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from videoatlas.errors import BadInputError
from videoatlas.evals.datasets._common import Loaded
from videoatlas.evals.datasets.adapter import Adapter, SuiteOptions
from videoatlas.evals.items import EvalItem, resolve

NAME = "jsonl"


def load(root: Path) -> list[EvalItem]:
    """Every line of the items file."""
    path = root if root.is_file() else root / "items.jsonl"
    if not path.is_file():
        raise BadInputError(f"{NAME}: {path} not found (give an items .jsonl file or a folder holding items.jsonl)")
    items = []
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadInputError(f"{path}:{line_no}: invalid JSON ({exc.msg})") from None
        item = EvalItem.from_dict(data)
        subs = resolve(path.parent, item.subtitles) if item.subtitles else None
        items.append(EvalItem(**{**item.as_dict(), "video": resolve(path.parent, item.video), "subtitles": subs}))
    return items


def _loaded(root: Path, options: SuiteOptions) -> Loaded:
    return Loaded(load(root))  # a bad line is an error, not a skipped record: the file is ours to fix


ADAPTER = Adapter(NAME, _loaded)
