"""On-disk, content-addressed cache of rendered images."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def render_key(params: dict[str, Any]) -> str:
    """A stable hash of render parameters (canonical JSON: sorted keys, fixed float repr)."""
    blob = json.dumps(params, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()


class RenderCache:
    """JPEG bytes stored under ``root/ab/abcdef....jpg`` by the hash of what produced them.

    Writes go to a temporary file and are renamed into place, so concurrent writers and readers
    never see a partial image.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path_for(self, key: str) -> Path:
        """Where the image for ``key`` lives."""
        return self.root / key[:2] / f"{key}.jpg"

    def get(self, key: str) -> tuple[bytes, dict[str, Any]] | None:
        """The cached bytes and their metadata, or None (also when either file is missing or torn)."""
        path = self.path_for(key)
        try:
            data = path.read_bytes()
            meta = json.loads(path.with_suffix(".json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        return data, meta

    def put(self, key: str, data: bytes, meta: dict[str, Any]) -> Path:
        """Store bytes and metadata atomically (metadata first, image last) and return the image path."""
        path = self.path_for(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(path.with_suffix(".json"), json.dumps(meta, sort_keys=True).encode())
        _atomic_write(path, data)
        return path


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
