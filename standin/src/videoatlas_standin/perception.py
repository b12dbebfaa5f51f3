"""What the stand-in VLM sees: text lines read from the pixels it was sent, grouped into labelled tiles.

Text lines are found by classical image processing (:mod:`.boxes`) and read by the CRNN recogniser inside the
``rapidocr-onnxruntime`` wheel (nothing downloaded). Lines shorter than ``min_text_px`` are not read: a model that
sees 28-pixel patches cannot read them either. Images are never upscaled. A label holding an index and a clock
time (``12  03:45``) or a tag and a time (``[C] 1:02:03.4``) marks a tile's top-left corner, as on a contact sheet;
every other line belongs to the tile above and left of it, and an image without labels is one tile. A tile is
blacked out by its pixels alone; text-like marks too small to read are counted, so the stand-in can say so.

Reading is deterministic, so a reading is also kept on disk (:class:`ReadingCache`) under a hash of the pixels and
of all that decides it (:func:`pixel_key`: this code, the OCR and image libraries' versions, the settings): any
process sent the same pixels takes it from there, and changed code never gets an old one. A speed-up only.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import itertools
import json
import os
import re
import statistics
import tempfile
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import structlog
from PIL import Image

from videoatlas.errors import BadInputError
from videoatlas.paths import home_dir
from videoatlas_standin import boxes
from videoatlas_standin.boxes import detect_text_lines, text_boxes

log = structlog.get_logger(__name__)

_CELL_LABEL = re.compile(r"^\s*(\d{1,6})\s*((?:\d{1,2}:)?\d{2}:\d{2}(?:\.\d+)?)\s*$")
_EVIDENCE_LABEL = re.compile(r"^\s*\[?([A-Z]{1,3})\]\s*((?:\d{1,2}:)?\d{2}:\d{2}(?:\.\d+)?)\s*$")
_TIME_ONLY = re.compile(r"^\s*((?:\d{1,2}:)?\d{2}:\d{2}(?:\.\d+)?)\s*$")
_SMALLEST_MARK_PX = 4
"""Marks shorter than this are noise, not text."""


@dataclass(frozen=True, slots=True)
class TextLine:
    """One line of text read from an image, with its box in that image's pixels."""

    text: str
    score: float
    x: int
    y: int
    w: int
    h: int


@dataclass(slots=True)
class Tile:
    """A region of an image: a grid cell (``cell`` set), a tagged tile (``evidence`` set), or a whole image."""

    cell: int | None
    evidence: str | None
    time: float | None
    x: int
    y: int
    lines: list[TextLine] = field(default_factory=list)
    image: int = 0
    """Which image of the request the tile is in (set when a request is understood)."""
    masked: bool = False
    """Almost every pixel is black: the tile was blacked out and shows no picture."""

    @property
    def text(self) -> str:
        """Everything read in the tile except its own label, space-joined."""
        return " ".join(line.text for line in self.lines)


@dataclass(slots=True)
class Sight:
    """Everything read in one image."""

    width: int
    height: int
    lines: list[TextLine]
    tiles: list[Tile]
    unreadable: int = 0
    """Text-like marks in the whole image too small or blurred to read."""

    @property
    def text(self) -> str:
        """All text read, in reading order."""
        return " ".join(line.text for line in self.lines)


def sight_from_dict(data: dict[str, Any]) -> Sight:
    """A :class:`Sight` from its stored form (``dataclasses.asdict`` of one, as the disk cache keeps it)."""
    lines = [TextLine(**ln) for ln in data["lines"]]
    tiles = [Tile(**{**t, "lines": [TextLine(**ln) for ln in t["lines"]]}) for t in data["tiles"]]
    return Sight(data["width"], data["height"], lines, tiles, data["unreadable"])


def parse_clock(text: str) -> float:
    """``"1:02:03.5"`` or ``"02:03.5"`` into seconds."""
    return functools.reduce(lambda total, part: total * 60 + float(part), text.split(":"), 0.0)


@dataclass(frozen=True, slots=True)
class EncodedImage:
    """An image as received: its bytes, their hash, and its size read from the header only."""

    data: bytes
    sha256: str
    width: int
    height: int

    def pixels(self) -> np.ndarray:
        """Decode to RGB (only needed when the image has not been read before)."""
        with Image.open(io.BytesIO(self.data)) as img:
            return np.asarray(img.convert("RGB"))


def decode_data_url(url: str) -> EncodedImage:
    """The image in a ``data:image/...;base64,`` URL, without decoding its pixels yet."""
    if not url.startswith("data:image/") or ";base64," not in url:
        raise ValueError("only base64 data URLs of images are accepted")
    raw = base64.b64decode(url.split(",", 1)[1], validate=False)
    with Image.open(io.BytesIO(raw)) as img:
        width, height = img.size
    return EncodedImage(raw, hashlib.sha256(raw).hexdigest(), width, height)


THREADS_ENV = "VIDEOATLAS_STANDIN_THREADS"
"""Threads each of the stand-in's models (the text reader, the speech model) may use; unset: their own defaults."""


def model_threads() -> int | None:
    """The threads ``$VIDEOATLAS_STANDIN_THREADS`` gives each model (None: unset); readings do not depend on it."""
    given = os.environ.get(THREADS_ENV, "").strip()
    if not given:
        return None
    if not given.isdigit() or int(given) < 1:
        raise BadInputError(f"{THREADS_ENV} must be a whole number of threads, 1 or more; got {given!r}")
    return int(given)


OCR_CACHE_ENV = "VIDEOATLAS_OCR_CACHE"
_LIBRARIES = ("rapidocr-onnxruntime", "onnxruntime", "opencv-python", "opencv-python-headless", "numpy", "pillow")


@functools.cache
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
    """Readings on disk under ``root``, one JSON file per key (written under a temporary name, then renamed)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def configured(cls) -> ReadingCache | None:
        """The cache ``$VIDEOATLAS_OCR_CACHE`` names (read on each call; ``off``: None), else the data directory's."""
        explicit = os.environ.get(OCR_CACHE_ENV, "").strip()
        if explicit.lower() == "off":
            return None
        return cls(Path(explicit).expanduser() if explicit else home_dir() / "cache" / "ocr")

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


class ReadCancelled(Exception):
    """A read given up because its server is stopping (no result: nothing is cached)."""


class Reader:
    """Text-line detection and recognition, with readings cached in memory and on disk (:class:`ReadingCache`)."""

    def __init__(self, min_text_px: int = 9, cache_size: int = 512) -> None:
        from rapidocr_onnxruntime import RapidOCR

        self.min_text_px = min_text_px
        threads = model_threads()
        self._engine = RapidOCR() if threads is None else RapidOCR(intra_op_num_threads=threads)
        self._lock = threading.Lock()
        self._cache: dict[str, Sight] = {}
        self._cache_size = cache_size

    def see(self, image: np.ndarray | EncodedImage, cancelled: Callable[[], bool] = lambda: False) -> Sight:
        """Read an image (cached by content: the encoded bytes' hash or the pixels', then the pixels' on disk).

        ``cancelled`` is asked before a recognition waits for the shared ONNX session: a stopping server gives up
        its queued reads (:class:`ReadCancelled`).
        """
        rgb = None if isinstance(image, EncodedImage) else image
        key = "enc:" + image.sha256 if isinstance(image, EncodedImage) else ""
        if rgb is not None:
            key = "rgb:" + hashlib.sha256(rgb.tobytes()).hexdigest() + f":{rgb.shape}"
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None:
            return hit
        if rgb is None:
            rgb = image.pixels()  # type: ignore[union-attr]
        disk = ReadingCache.configured()
        settings = f"min_text_px={self.min_text_px}"
        disk_key = pixel_key(rgb, settings, __file__, boxes.__file__) if disk is not None else ""
        stored = disk.get(disk_key) if disk is not None else None
        sight = sight_from_dict(stored) if stored is not None else self._read(rgb, cancelled)
        if disk is not None and stored is None:
            disk.put(disk_key, sight)
        with self._lock:
            if len(self._cache) >= self._cache_size:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = sight
        return sight

    def _read(self, rgb: np.ndarray, cancelled: Callable[[], bool]) -> Sight:
        """Read the pixels: text lines, marks too small to read, and the tiles they make."""
        lines, illegible = self._read_lines(rgb, cancelled)
        small = [
            box
            for box in detect_text_lines(rgb, _SMALLEST_MARK_PX, max_px=self.min_text_px - 1)
            if not any(_overlap(box, (ln.x, ln.y, ln.w, ln.h)) for ln in lines)  # a piece of a larger letter
        ]
        return _layout(rgb, lines, small + illegible)

    def _read_lines(
        self, rgb: np.ndarray, cancelled: Callable[[], bool]
    ) -> tuple[list[TextLine], list[tuple[int, int, int, int]]]:
        """Lines read, and boxes of lines large enough to read whose text could not be made out."""
        found = text_boxes(rgb, self.min_text_px)  # label plates are read apart from what they cover
        keys: list[str] = []
        crops: dict[str, np.ndarray] = {}  # by content: a crop found twice is recognised once
        for (x, y, w, h), source in found:
            pad = max(2, h // 6)
            crop = source[max(0, y - pad) : y + h + pad, max(0, x - pad) : x + w + pad]
            keys.append(hashlib.md5(crop.tobytes() + str(crop.shape).encode()).hexdigest())
            crops.setdefault(keys[-1], crop)
        if not crops:
            return [], []
        with self._lock:  # the ONNX session is shared
            if cancelled():
                raise ReadCancelled
            results, _ = self._engine.text_rec([np.ascontiguousarray(crop[:, :, ::-1]) for crop in crops.values()])
        read = dict(zip(crops, results, strict=True))
        lines, illegible = [], []
        for ((x, y, w, h), _), key in zip(found, keys, strict=True):
            text, score = read[key]
            text = str(text).strip()
            if text and float(score) >= 0.6 and any(ch.isalnum() for ch in text):
                lines.append(TextLine(text, float(score), x, y, w, h))
            elif w >= 3 * h:  # a long run of glyph-like marks that did not read as text
                illegible.append((x, y, w, h))
        lines.sort(key=lambda ln: (ln.y // 8, ln.x))
        return lines, illegible


_SHARED_LOCK = threading.Lock()
_SHARED: dict[int, Reader] = {}


def shared_reader(min_text_px: int) -> Reader:
    """The process's reader for that smallest text size, shared by every server it runs (readings depend on no more)."""
    with _SHARED_LOCK:
        if min_text_px not in _SHARED:
            _SHARED[min_text_px] = Reader(min_text_px=min_text_px)
        return _SHARED[min_text_px]


def _layout(rgb: np.ndarray, lines: list[TextLine], unread: list[tuple[int, int, int, int]]) -> Sight:
    """Group lines into tiles by the labels that start every tile; one tile for an unlabelled image."""
    height, width = rgb.shape[:2]
    tiles: list[Tile] = []
    rest: list[TextLine] = []
    lines = _joined_labels(lines)
    for line in lines:
        cell = _CELL_LABEL.match(line.text)
        evidence = _EVIDENCE_LABEL.match(line.text.replace(" ", "")) or _EVIDENCE_LABEL.match(line.text)
        if evidence:
            tiles.append(Tile(None, evidence.group(1), parse_clock(evidence.group(2)), line.x, line.y))
        elif cell:
            tiles.append(Tile(int(cell.group(1)), None, parse_clock(cell.group(2)), line.x, line.y))
        else:
            rest.append(line)
    sight = Sight(width, height, lines, tiles, unreadable=len(unread))
    if len(tiles) == 1:
        tiles[0].lines.extend(rest)
        return sight
    if not tiles:  # one tile, the whole image; a lone time stamp labels it (a zoomed frame) and is not content
        stamp = next((ln for ln in lines if _TIME_ONLY.match(ln.text)), None)
        time = parse_clock(stamp.text) if stamp is not None else None
        tiles.append(Tile(None, None, time, 0, 0, [ln for ln in rest if ln is not stamp], masked=_is_blank(rgb)))
        return sight
    step_x, step_y = _step([t.x for t in tiles], width), _step([t.y for t in tiles], height)
    for line in rest:
        owner = _owner(tiles, line.x + line.w / 2, line.y + line.h / 2, step_x, step_y)
        if owner is not None:
            owner.lines.append(line)
    for tile in tiles:  # blacked out by its pixels alone: whatever is written over it is a mark, not content
        x0, y0 = max(0, tile.x - 4), max(0, tile.y - 4)
        tile.masked = _is_blank(rgb[y0 : y0 + int(step_y), x0 : x0 + int(step_x)])
    return sight


def _joined_labels(lines: list[TextLine]) -> list[TextLine]:
    """A tile label found as two lines (its number, its time beside it; a separator made one box taller) as one."""
    out, used = list(lines), set()
    for num in (ln for ln in lines if ln.text.strip().isdigit()):
        for ln in (ln for ln in lines if _TIME_ONLY.match(ln.text) and id(ln) not in used):
            if -2 <= ln.x - (num.x + num.w) <= 2 * ln.h and abs(ln.y + ln.h / 2 - num.y - num.h / 2) <= ln.h:
                top, bottom = min(num.y, ln.y), max(num.y + num.h, ln.y + ln.h)
                text, score = f"{num.text.strip()} {ln.text.strip()}", min(num.score, ln.score)
                out.append(TextLine(text, score, num.x, top, ln.x + ln.w - num.x, bottom - top))
                used |= {id(num), id(ln)}
                break
    return sorted((ln for ln in out if id(ln) not in used), key=lambda ln: (ln.y // 8, ln.x))


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _is_blank(region: np.ndarray) -> bool:
    """Whether a region is (nearly) all pure black (not dark: a night scene has shades): a picture blacked out."""
    if region.size == 0:
        return False
    black = (region.max(axis=2) < boxes.BLACK).mean()
    return bool(black >= 0.8)


def _step(positions: list[int], extent: int) -> float:
    """Typical distance between neighbouring tile origins along one axis."""
    gaps = [b - a for a, b in itertools.pairwise(sorted(set(positions))) if b - a > 8]
    return float(statistics.median(gaps)) if gaps else float(extent)


def _owner(tiles: list[Tile], cx: float, cy: float, step_x: float, step_y: float) -> Tile | None:
    """The tile whose cell holds ``(cx, cy)``: of those that start above and left of it, the lowest, then rightmost."""
    mine = [t for t in tiles if t.x - 6 <= cx < t.x - 6 + step_x and t.y - 6 <= cy < t.y - 6 + step_y]
    return max(mine, key=lambda t: (t.y, t.x), default=None)
