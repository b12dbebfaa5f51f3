"""What the stand-in VLM sees: text lines read from the pixels it was sent, grouped into labelled tiles.

Text lines are found with classical image processing (morphological gradient, threshold,
horizontal closing, contours) and read by the CRNN recogniser that ships inside the
``rapidocr-onnxruntime`` wheel; nothing is downloaded. Lines shorter than ``min_text_px`` pixels
are not read at all: a model that sees an image in 28-pixel patches cannot read text that small,
so neither does the stand-in. Images are never upscaled.

Tiles are recovered the way a person reading the picture would: grids and scratchpads carry
burned-in labels ("12  03:45" or "[C] 1:02:03.4") at the top-left of every tile; the labels'
positions give the tile layout, and every other line belongs to the tile whose label is above
and to its left.
"""

from __future__ import annotations

import base64
import hashlib
import io
import itertools
import re
import statistics
import threading
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np
from PIL import Image

_CELL_LABEL = re.compile(r"^\s*(\d{1,4})\s*((?:\d{1,2}:)?\d{2}:\d{2}(?:\.\d+)?)\s*$")
_EVIDENCE_LABEL = re.compile(r"^\s*\[?([A-Z]{1,3})\]\s*((?:\d{1,2}:)?\d{2}:\d{2}(?:\.\d+)?)\s*$")
_TIME_ONLY = re.compile(r"^\s*((?:\d{1,2}:)?\d{2}:\d{2}(?:\.\d+)?)\s*$")


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
    """A labelled region of an image: a grid cell (``cell`` set) or an evidence tile (``evidence`` set)."""

    cell: int | None
    evidence: str | None
    time: float | None
    x: int
    y: int
    lines: list[TextLine] = field(default_factory=list)

    @property
    def text(self) -> str:
        """Everything read in the tile except its own label, space-joined."""
        return " ".join(line.text for line in self.lines)

    @property
    def explored(self) -> bool:
        """Whether the tile is blacked out as explored."""
        return "EXPLORED" in self.text.upper().replace(" ", "")


@dataclass(slots=True)
class Sight:
    """Everything read in one image."""

    width: int
    height: int
    lines: list[TextLine]
    tiles: list[Tile]
    label_time: float | None = None
    """For an image with a single timestamp label and no tiles (a zoomed frame): that time."""

    @property
    def text(self) -> str:
        """All text read, in reading order."""
        return " ".join(line.text for line in self.lines)


def parse_clock(text: str) -> float:
    """``"1:02:03.5"`` or ``"02:03.5"`` into seconds."""
    parts = [float(p) for p in text.split(":")]
    value = 0.0
    for part in parts:
        value = value * 60 + part
    return value


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


class Reader:
    """Text-line detection and recognition, with a per-image cache (images repeat a lot)."""

    def __init__(self, min_text_px: int = 9, cache_size: int = 512) -> None:
        from rapidocr_onnxruntime import RapidOCR

        self.min_text_px = min_text_px
        self._engine = RapidOCR()
        self._lock = threading.Lock()
        self._cache: dict[str, Sight] = {}
        self._cache_size = cache_size

    def see(self, image: np.ndarray | EncodedImage) -> Sight:
        """Read an image (cached by content: the encoded bytes' hash, or the pixels')."""
        if isinstance(image, EncodedImage):
            key = "enc:" + image.sha256
        else:
            key = "rgb:" + hashlib.sha256(image.tobytes()).hexdigest() + f":{image.shape}"
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None:
            return hit
        rgb = image.pixels() if isinstance(image, EncodedImage) else image
        lines = self._read_lines(rgb)
        sight = _layout(rgb.shape[1], rgb.shape[0], lines)
        with self._lock:
            if len(self._cache) >= self._cache_size:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = sight
        return sight

    def _read_lines(self, rgb: np.ndarray) -> list[TextLine]:
        boxes = detect_text_lines(rgb, self.min_text_px)
        crops: list[np.ndarray] = []
        keys: list[str] = []
        unique: dict[str, int] = {}
        for x, y, w, h in boxes:
            pad = max(2, h // 6)
            crop = rgb[max(0, y - pad) : y + h + pad, max(0, x - pad) : x + w + pad]
            digest = hashlib.md5(crop.tobytes() + str(crop.shape).encode()).hexdigest()
            keys.append(digest)
            if digest not in unique:
                unique[digest] = len(crops)
                crops.append(np.ascontiguousarray(crop[:, :, ::-1]))
        if not crops:
            return []
        with self._lock:  # the ONNX session is shared
            results, _ = self._engine.text_rec(crops)
        lines = []
        for (x, y, w, h), digest in zip(boxes, keys, strict=True):
            text, score = results[unique[digest]]
            text = str(text).strip()
            if text and float(score) >= 0.6 and any(ch.isalnum() for ch in text):
                lines.append(TextLine(text, float(score), x, y, w, h))
        lines.sort(key=lambda ln: (ln.y // 8, ln.x))
        return lines


def detect_text_lines(rgb: np.ndarray, min_text_px: int) -> list[tuple[int, int, int, int]]:
    """Boxes ``(x, y, w, h)`` of likely text lines: dense, high-contrast strokes on one baseline."""
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    gradient = cv2.morphologyEx(gray, cv2.MORPH_GRADIENT, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3)))
    _, binary = cv2.threshold(gradient, 60, 255, cv2.THRESH_BINARY)
    # Long straight edges (grid lines, frame borders, letterbox edges) are not text: remove them so
    # they cannot glue neighbouring labels into one tall blob.
    vertical = cv2.morphologyEx(binary, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (1, 41)))
    horizontal = cv2.morphologyEx(binary, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (41, 1)))
    binary = cv2.bitwise_and(binary, cv2.bitwise_not(cv2.bitwise_or(vertical, horizontal)))
    joined = cv2.morphologyEx(binary, cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_RECT, (5, 3)))
    contours, _ = cv2.findContours(joined, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    height, width = gray.shape
    pieces = []
    for contour in contours:
        x, y, w, h = cv2.boundingRect(contour)
        if h < min_text_px or h > height * 0.4 or w > width * 0.98 or w < 2:
            continue
        fill = float(binary[y : y + h, x : x + w].mean()) / 255
        if not 0.12 <= fill <= 0.9:  # outlines of large solid shapes are sparse
            continue
        pieces.append((x, y, w, h))
    return [box for box in _merge_words(pieces) if box[2] >= box[3] * 0.5]


def _merge_words(boxes: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Join glyph groups that sit on one baseline with word-sized gaps into lines."""
    boxes = sorted(boxes, key=lambda b: (b[0], b[1]))
    merged: list[list[int]] = []
    for x, y, w, h in boxes:
        for line in merged:
            lx, ly, lw, lh = line
            same_row = abs((y + h / 2) - (ly + lh / 2)) < 0.35 * max(h, lh)
            similar = max(h, lh) <= 1.6 * min(h, lh)
            gap = x - (lx + lw)
            if same_row and similar and -2 <= gap <= 0.9 * max(h, lh):
                nx, ny = min(lx, x), min(ly, y)
                line[:] = [nx, ny, max(lx + lw, x + w) - nx, max(ly + lh, y + h) - ny]
                break
        else:
            merged.append([x, y, w, h])
    return [(b[0], b[1], b[2], b[3]) for b in merged]


def _layout(width: int, height: int, lines: list[TextLine]) -> Sight:
    """Group lines into tiles by the burned-in labels that start every tile."""
    tiles: list[Tile] = []
    rest: list[TextLine] = []
    for line in lines:
        cell = _CELL_LABEL.match(line.text)
        evidence = _EVIDENCE_LABEL.match(line.text.replace(" ", "")) or _EVIDENCE_LABEL.match(line.text)
        if evidence:
            tiles.append(Tile(None, evidence.group(1), parse_clock(evidence.group(2)), line.x, line.y))
        elif cell:
            tiles.append(Tile(int(cell.group(1)), None, parse_clock(cell.group(2)), line.x, line.y))
        else:
            rest.append(line)
    sight = Sight(width, height, lines, tiles)
    if len(tiles) < 2:
        if len(tiles) == 1:
            tiles[0].lines.extend(rest)
        else:
            stamp = next((m for m in (_TIME_ONLY.match(ln.text) for ln in lines) if m), None)
            sight.label_time = parse_clock(stamp.group(1)) if stamp else None
        return sight
    xs = sorted({t.x for t in tiles})
    ys = sorted({t.y for t in tiles})
    step_x = _step(xs, width)
    step_y = _step(ys, height)
    for line in rest:
        owner = _owner(tiles, line, step_x, step_y)
        if owner is not None:
            owner.lines.append(line)
    return sight


def _step(positions: list[int], extent: int) -> float:
    """Typical distance between neighbouring tile origins along one axis."""
    gaps = [b - a for a, b in itertools.pairwise(positions) if b - a > 8]
    return float(statistics.median(gaps)) if gaps else float(extent)


def _owner(tiles: list[Tile], line: TextLine, step_x: float, step_y: float) -> Tile | None:
    cx, cy = line.x + line.w / 2, line.y + line.h / 2
    best: Tile | None = None
    for tile in tiles:
        if (
            tile.x - 6 <= cx < tile.x - 6 + step_x
            and tile.y - 6 <= cy < tile.y - 6 + step_y
            and (best is None or (tile.y, tile.x) > (best.y, best.x))
        ):
            best = tile
    return best


def sight_summary(sight: Sight) -> dict[str, Any]:
    """Plain data for debugging and tests."""
    return {
        "tiles": [
            {"cell": t.cell, "evidence": t.evidence, "time": t.time, "text": t.text, "explored": t.explored}
            for t in sight.tiles
        ],
        "label_time": sight.label_time,
        "text": sight.text,
    }
