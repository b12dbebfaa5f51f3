"""The stand-in's model id, in a module of its own so ``--help`` can name it cheaply.

The id carries a hash of the package's sources: eval results keyed by model re-run whenever the stand-in changes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def _sources_hash() -> str:
    """The first 8 hex digits of a sha256 over the package's ``.py`` sources, taken in name order."""
    digest = hashlib.sha256()
    for source in sorted(Path(__file__).parent.glob("*.py"), key=lambda p: p.name):
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()[:8]


STANDIN_MODEL = f"videoatlas-standin-{_sources_hash()}"
"""The stand-in's model id: it changes whenever a source of the stand-in does."""
