"""Where the lines of text in a picture are: boxes found from strokes, and label plates read apart.

Lines are where dense, high-contrast strokes run along one baseline (:func:`detect_text_lines`); large letters are
found on reduced copies (:func:`detect_large_text`). A frame's id and time are usually burned in on a black plate
whose strokes would join the picture's own text beside it; :func:`text_boxes` reads a plate's lines on the plate
alone and the rest with every plate painted over, so neither reading takes strokes from the other.
"""

from __future__ import annotations

import cv2
import numpy as np

Box = tuple[int, int, int, int]
"""``(x, y, w, h)`` in pixels."""

BLACK = 8
"""Channel values below this are pure black: a plate, or a blacked-out picture (:func:`.perception._is_blank`)."""
_DARK = 40
"""Channel values below this are dark enough for a plate's margin, where compression brightens pure black."""
_MAX_PLATE_PX = 64
"""A plate is at most this tall: a few lines of text, not a blacked-out picture or a letterbox bar."""
_FILLED = 0.85
"""Share of a plate's box that is black once the strokes on it are closed over: a box, not a shape."""


def find_plates(rgb: np.ndarray, min_text_px: int) -> list[Box]:
    """The black plates of the picture that could hold a line of text at least ``min_text_px`` tall."""
    height, width = rgb.shape[:2]
    black = (rgb.max(axis=2) < BLACK).astype(np.uint8)
    # Close over the strokes written on a plate (and the ringing a compressed picture adds around them).
    closed = cv2.morphologyEx(black, cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_RECT, (7, 7)))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(closed, connectivity=8)
    plates: list[Box] = []
    for n in range(1, count):
        x, y, w, h, _ = (int(v) for v in stats[n])
        if h < min_text_px or w < min_text_px:
            continue
        # Trim the rows and columns that only a few black specks reach (compression noise beside a plate).
        mine = labels[y : y + h, x : x + w] == n
        rows, cols = np.flatnonzero(mine.mean(axis=1) >= 0.5), np.flatnonzero(mine.mean(axis=0) >= 0.5)
        if not len(rows) or not len(cols):
            continue
        y, h, x, w = y + int(rows[0]), int(rows[-1] - rows[0]) + 1, x + int(cols[0]), int(cols[-1] - cols[0]) + 1
        if not min_text_px <= h <= min(_MAX_PLATE_PX, height * 0.2) or w < h or w > width * 0.9:
            continue
        if (labels[y : y + h, x : x + w] == n).mean() >= _FILLED and _framed_in_black(rgb[y : y + h, x : x + w]):
            plates.append((x, y, w, h))
    return plates


def _framed_in_black(box: np.ndarray) -> bool:
    """Whether the box's outer two pixels are (nearly) all dark: a plate's margin, not the edge of black letters."""
    dark = box.max(axis=2) < _DARK
    ring = np.concatenate([dark[:2].ravel(), dark[-2:].ravel(), dark[:, :2].ravel(), dark[:, -2:].ravel()])
    return bool(ring.mean() >= _FILLED)


def painted_over(rgb: np.ndarray, plates: list[Box]) -> np.ndarray:
    """The picture with every plate painted in the median colour of the two-pixel rim around it (a copy)."""
    if not plates:
        return rgb
    out = rgb.copy()
    for x, y, w, h in plates:
        x0, y0 = max(0, x - 2), max(0, y - 2)
        region = rgb[y0 : y + h + 2, x0 : x + w + 2]
        outside = np.ones(region.shape[:2], dtype=bool)
        outside[y - y0 : y - y0 + h, x - x0 : x - x0 + w] = False
        rim = region[outside]
        if len(rim):
            out[y : y + h, x : x + w] = np.median(rim, axis=0).astype(rgb.dtype)
    return out


def alone(rgb: np.ndarray, plate: Box) -> tuple[np.ndarray, tuple[int, int]]:
    """The plate on a black margin as tall as itself (where a line fills no more than any may), and its offset."""
    x, y, w, h = plate
    crop = np.ascontiguousarray(rgb[y : y + h, x : x + w])
    framed = cv2.copyMakeBorder(crop, h, h, h, h, cv2.BORDER_CONSTANT, value=(0, 0, 0))
    return framed, (x - h, y - h)


def detect_text_lines(rgb: np.ndarray, min_text_px: int, max_px: int | None = None) -> list[tuple[int, int, int, int]]:
    """Boxes ``(x, y, w, h)`` of likely text lines, ``min_text_px`` to ``max_px`` (None: any) pixels tall.

    A line is dense, high-contrast strokes on one baseline; a small range of heights finds text too small to read.
    """
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
        if h < min_text_px or h > height * 0.4 or w > width * 0.98 or w < 2 or (max_px is not None and h > max_px):
            continue
        fill = float(binary[y : y + h, x : x + w].mean()) / 255
        if not 0.12 <= fill <= 0.9:  # outlines of large solid shapes are sparse
            continue
        pieces.append((x, y, w, h))
    boxes = [box for box in _merge_words(pieces) if box[2] >= box[3] * 0.5]
    if max_px is not None:  # a lone speck is not text: small text comes in runs of several glyphs
        boxes = [box for box in boxes if box[2] >= box[3] * 3 and box[3] <= max_px * 1.6]
    return boxes


def detect_large_text(rgb: np.ndarray, min_text_px: int) -> list[tuple[int, int, int, int]]:
    """Text-line boxes at every size: a line found at half or quarter size replaces its pieces found at full size.

    The stroke detector sees only the outlines of letters much taller than its kernel, and breaks a large word up.
    """
    boxes = detect_text_lines(rgb, min_text_px)
    height, width = rgb.shape[:2]
    for factor in (2, 4):
        if min(height, width) // factor < 4 * min_text_px:
            break
        small = cv2.resize(rgb, (width // factor, height // factor), interpolation=cv2.INTER_AREA)
        coarse = [
            (x * factor, y * factor, w * factor, h * factor) for x, y, w, h in detect_text_lines(small, 2 * min_text_px)
        ]
        for cx, cy, cw, ch in coarse:
            inside = [b for b in boxes if cx <= b[0] + b[2] / 2 <= cx + cw and cy <= b[1] + b[3] / 2 <= cy + ch]
            if inside and max(b[2] for b in inside) >= cw * 0.9:
                continue  # already found whole at the finer scale
            if inside and ch > 1.6 * max(b[3] for b in inside):
                continue  # lines stacked close together, run into one box at the reduced size
            boxes = [b for b in boxes if b not in inside] + [(cx, cy, cw, ch)]
    return boxes


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


def text_boxes(rgb: np.ndarray, min_text_px: int) -> list[tuple[Box, np.ndarray]]:
    """Every line box worth reading, each with the picture to crop it from (plates read apart)."""
    plates = find_plates(rgb, min_text_px)
    rest = painted_over(rgb, plates)
    found = [(box, rest) for box in detect_large_text(rest, min_text_px)]
    for framed, (dx, dy) in (alone(rgb, plate) for plate in plates):
        found += [((x + dx, y + dy, w, h), rgb) for x, y, w, h in detect_text_lines(framed, min_text_px)]
    return found
