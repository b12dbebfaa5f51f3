"""The stand-in's readings kept on disk, by the content of the pixels read: OCR done once per image, ever.

A reading (:class:`~.perception.Sight`) is stored under a hash of the decoded pixels and of everything that decides
it (the reading code, the OCR and image libraries' versions, the reader's settings), so any process sent the same
pixels takes it from there, and changed code never gets an old reading. Where: ``$VIDEOATLAS_OCR_CACHE`` (``off``:
no cache), else ``cache/ocr`` in the data directory; one JSON file per image, written under a temporary name and
renamed into place. A speed-up only: a miss reads the image as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from videoatlas.paths import home_dir

log = structlog.get_logger(__name__)

ENV = "VIDEOATLAS_OCR_CACHE"
_LIBRARIES = ("rapidocr-onnxruntime", "onnxruntime", "opencv-python", "opencv-python-headless", "numpy", "pillow")


def cache_dir() -> Path | None:
    """Where readings are kept, or None when ``$VIDEOATLAS_OCR_CACHE`` is ``off`` (read on each call)."""
    explicit = os.environ.get(ENV, "").strip()
    if explicit.lower() == "off":
        return None
    return Path(explicit).expanduser() if explicit else home_dir() / "cache" / "ocr"


@cache
def code_fingerprint(*sources: str) -> str:
    """A hash of what decides a reading besides the pixels and settings: its code (``sources``) and libraries."""
    digest = hashlib.sha256()
    for source in sources:
        digest.update(Path(source).read_bytes())
    for name in _LIBRARIES:
        try:
            digest.update(f"{name}={metadata.version(name)};".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name}=-;".encode())
    return digest.hexdigest()


def pixel_key(rgb: np.ndarray, settings: str, *sources: str) -> str:
    """The key of a reading: the pixels and their shape, the reader's settings, the code's (``sources``) fingerprint."""
    digest = hashlib.sha256(np.ascontiguousarray(rgb).tobytes())
    digest.update(f"|{rgb.shape}|{rgb.dtype}|{settings}|{code_fingerprint(*sources)}".encode())
    return digest.hexdigest()


class ReadingCache:
    """Readings on disk under ``root``, one JSON file per key."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def configured(cls) -> ReadingCache | None:
        """The cache the environment names (None: turned off)."""
        root = cache_dir()
        return cls(root) if root is not None else None

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reading for ``key`` as written by :meth:`put`, or None (absent or unreadable)."""
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # a damaged entry is read again and rewritten, and said so
            log.warning("ocr_cache_entry_unreadable", path=str(path), error=str(exc)[:200])
            return None
        return data if isinstance(data, dict) else None

    def put(self, key: str, reading: Any) -> None:
        """Store a reading (a dataclass); a cache that cannot be written is logged, never an error of the request."""
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(asdict(reading), out, separators=(",", ":"))
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("ocr_cache_not_written", path=str(path), error=str(exc)[:200])
