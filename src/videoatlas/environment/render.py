"""Drawing what the model sees: contact-sheet grids, zoomed frames and the evidence scratchpad.

Everything here is a pure function of its inputs (decoded pixels, intervals, labels), so identical
requests give identical pixels and, through :func:`encode_jpeg`, byte-identical JPEGs.

Visual-token cost of a grid (one token per patch, image sides rounded to whole patches): about
``round(K*cell_px / P) ** 2``. With the defaults K=8 and 320 px cells the sheet is 2560 x 2560:
8,281 tokens for 28 px patches (Qwen2.5-VL) and 6,400 tokens for 32 px patches (Qwen3-VL); see
:func:`videoatlas.llm.images.image_tokens`.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from videoatlas.environment.geometry import Cell, Interval, covered_fraction
from videoatlas.environment.timefmt import format_ts
from videoatlas.environment.video import DecodedFrame

RENDER_VERSION = 2
"""Bump when drawing changes, so on-disk render caches do not serve stale pictures."""

_BG = (24, 24, 24)
_GRID_LINE = (90, 90, 90)
_LABEL_BG = (0, 0, 0)
_LABEL_FG = (255, 255, 255)
_DEAD_FG = (200, 40, 40)
_UNAVAILABLE_BG = (70, 70, 70)


@lru_cache(maxsize=32)
def load_font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's bundled scalable font at ``size`` px (no system fonts needed)."""
    return ImageFont.load_default(size=size)


def time_decimals(span: float) -> int:
    """How many decimals a cell's start time needs for its span to be told apart from neighbours."""
    if span >= 10:
        return 0
    if span >= 1:
        return 1
    if span >= 0.1:
        return 2
    return 3


def _paste_centered(canvas: Image.Image, frame: DecodedFrame, x: int, y: int, px: int) -> None:
    assert frame.image is not None
    img = Image.fromarray(frame.image, "RGB")
    if img.width > px or img.height > px:  # only when a caller hands in a larger decode
        img.thumbnail((px, px), Image.Resampling.BILINEAR)
    canvas.paste(img, (x + (px - img.width) // 2, y + (px - img.height) // 2))


def _label(draw: ImageDraw.ImageDraw, x: int, y: int, text: str, size: int) -> int:
    """Draw ``text`` on a label box at (x, y); the box's bottom edge."""
    font = load_font(size)
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    pad = max(2, size // 6)
    low = int(y + bottom - top + 2 * pad)
    draw.rectangle((x, y, x + right - left + 2 * pad, low), fill=_LABEL_BG)
    draw.text((x + pad - left, y + pad - top), text, fill=_LABEL_FG, font=font)
    return low


def draw_centered_text(
    draw: ImageDraw.ImageDraw, cx: int, cy: int, text: str, size: int, fill: tuple[int, int, int]
) -> None:
    """Draw ``text`` with the bundled font so that its ink is centred on ``(cx, cy)``."""
    font = load_font(size)
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    draw.text((cx - (right - left) // 2 - left, cy - (bottom - top) // 2 - top), text, fill=fill, font=font)


def _centered_text(
    draw: ImageDraw.ImageDraw,
    box: tuple[int, int, int, int],
    text: str,
    size: int,
    fill: tuple[int, int, int],
) -> None:
    x0, y0, x1, y1 = box
    draw_centered_text(draw, (x0 + x1) // 2, (y0 + y1) // 2, text, size, fill)


def render_grid(
    cells: Sequence[Cell],
    frames: Sequence[DecodedFrame],
    k: int,
    cell_px: int = 320,
    dead_zones: Sequence[Interval] = (),
    notes: Sequence[str] = (),
) -> Image.Image:
    """A ``k x k`` contact sheet: one frame per cell, labelled with cell id and start time.

    Cells fully inside dead zones are blacked out and crossed; partly explored cells carry a red
    bar along their bottom edge as long as the explored share. Cells whose frame could not be
    decoded are grey and say so. ``notes`` (one per cell, empty for none) are printed on a second
    label line under the first.
    """
    if len(cells) != k * k or len(frames) != k * k or (notes and len(notes) != k * k):
        raise ValueError(f"a {k}x{k} grid needs {k * k} cells and frames")
    side = k * cell_px
    canvas = Image.new("RGB", (side, side), _BG)
    draw = ImageDraw.Draw(canvas)
    label_size = max(10, cell_px // 10)
    span = cells[0].interval.span
    decimals = time_decimals(span)
    for cell, frame in zip(cells, frames, strict=True):
        row, col = divmod(cell.index, k)
        x, y = col * cell_px, row * cell_px
        covered = covered_fraction(cell.interval, dead_zones) if dead_zones else 0.0
        box = (x, y, x + cell_px - 1, y + cell_px - 1)
        if covered >= 0.999:
            draw.rectangle(box, fill=(0, 0, 0))
            # A cross over the picture area and a word under it, apart so both stay legible.
            left, right = x + cell_px // 4, x + cell_px - cell_px // 4
            top, bottom = y + cell_px // 5, y + cell_px * 7 // 10
            width = max(2, cell_px // 40)
            draw.line((left, top, right, bottom), fill=_DEAD_FG, width=width)
            draw.line((left, bottom, right, top), fill=_DEAD_FG, width=width)
            draw_centered_text(draw, x + cell_px // 2, y + cell_px * 17 // 20, "EXPLORED", label_size, _DEAD_FG)
        elif frame.image is None:
            draw.rectangle(box, fill=_UNAVAILABLE_BG)
            _centered_text(draw, box, "frame unavailable", max(10, label_size * 3 // 4), (230, 230, 230))
        else:
            _paste_centered(canvas, frame, x, y, cell_px)
            if covered > 0:
                bar = max(4, cell_px // 32)
                draw.rectangle((x, y + cell_px - bar, x + int(cell_px * covered), y + cell_px - 1), fill=_DEAD_FG)
        bottom = _label(draw, x + 2, y + 2, f"{cell.index}  {format_ts(cell.interval.start, decimals)}", label_size)
        if notes and notes[cell.index] and covered < 0.999:
            _label(draw, x + 2, bottom + 2, notes[cell.index], max(9, label_size * 4 // 5))
    for i in range(1, k):
        draw.line((i * cell_px, 0, i * cell_px, side), fill=_GRID_LINE, width=2)
        draw.line((0, i * cell_px, side, i * cell_px), fill=_GRID_LINE, width=2)
    return canvas


def render_mosaic(
    frames: Sequence[DecodedFrame], labels: Sequence[str], cols: int, tile_w: int, tile_h: int
) -> Image.Image:
    """Frames at any times, ``cols`` to a row in time order, each captioned like a grid cell (id and time).

    Each frame keeps the video's aspect (``tile_w`` x ``tile_h``) under a caption strip of its own,
    so the label never sits on the picture's own text; a frame that could not be decoded is grey
    and says so.
    """
    if len(frames) != len(labels) or not frames:
        raise ValueError("one label per frame, and at least one frame")
    rows = math.ceil(len(frames) / cols)
    label_size = max(10, min(tile_w, tile_h) // 10)
    strip = label_size + 2 * max(2, label_size // 6) + 2
    cell_h = tile_h + strip
    canvas = Image.new("RGB", (cols * tile_w, rows * cell_h), _BG)
    draw = ImageDraw.Draw(canvas)
    for slot, (frame, label) in enumerate(zip(frames, labels, strict=True)):
        row, col = divmod(slot, cols)
        x, y = col * tile_w, row * cell_h
        top = y + strip
        if frame.image is None:
            draw.rectangle((x, top, x + tile_w - 1, top + tile_h - 1), fill=_UNAVAILABLE_BG)
            _centered_text(draw, (x, top, x + tile_w, top + tile_h), "frame unavailable", label_size, (230, 230, 230))
        else:
            img = Image.fromarray(frame.image, "RGB")
            if img.width > tile_w or img.height > tile_h:
                img.thumbnail((tile_w, tile_h), Image.Resampling.BILINEAR)
            canvas.paste(img, (x + (tile_w - img.width) // 2, top + (tile_h - img.height) // 2))
        _label(draw, x + 2, y + 1, label, label_size)
    for i in range(1, cols):
        draw.line((i * tile_w, 0, i * tile_w, canvas.height), fill=_GRID_LINE, width=2)
    for i in range(1, rows):
        draw.line((0, i * cell_h, canvas.width, i * cell_h), fill=_GRID_LINE, width=2)
    return canvas


def render_zoom(frame: DecodedFrame, label: str) -> Image.Image:
    """One frame at high resolution with its timestamp burned into the top-left corner."""
    if frame.image is None:
        canvas = Image.new("RGB", (640, 360), _UNAVAILABLE_BG)
        draw = ImageDraw.Draw(canvas)
        _centered_text(draw, (0, 0, 640, 360), f"frame unavailable ({frame.reason})", 24, (230, 230, 230))
    else:
        canvas = Image.fromarray(frame.image, "RGB").copy()
        draw = ImageDraw.Draw(canvas)
    _label(draw, 4, 4, label, max(14, canvas.height // 24))
    return canvas


def evidence_label(index: int) -> str:
    """Spreadsheet-style labels: 0 -> A, 25 -> Z, 26 -> AA, 51 -> AZ, 52 -> BA."""
    if index < 0:
        raise ValueError("label index must be >= 0")
    letters = ""
    n = index + 1
    while n:
        n, rem = divmod(n - 1, 26)
        letters = chr(ord("A") + rem) + letters
    return letters


@dataclass(frozen=True, slots=True)
class ScratchTile:
    """One evidence item as drawn: its label index, its time, an optional subtitle line."""

    index: int
    time: float
    subtitle: str | None = None


def layout(n: int) -> tuple[int, int]:
    """Near-square (columns, rows) for ``n`` tiles: columns = ceil(sqrt(n))."""
    if n <= 0:
        return 1, 1
    cols = math.ceil(math.sqrt(n))
    return cols, math.ceil(n / cols)


def _wrap(draw: ImageDraw.ImageDraw, text: str, size: int, width: int, max_lines: int) -> list[str]:
    font = load_font(size)
    lines: list[str] = []
    current = ""
    for word in text.split():
        trial = f"{current} {word}".strip()
        if draw.textlength(trial, font=font) <= width or not current:
            current = trial
        else:
            lines.append(current)
            current = word
        if len(lines) == max_lines:
            break
    if current and len(lines) < max_lines:
        lines.append(current)
    return lines


def render_scratchpad_page(
    tiles: Sequence[ScratchTile], frames: Sequence[DecodedFrame], tile_px: int = 320
) -> Image.Image:
    """One page of evidence: near-square tiles labelled ``[A] 1:02:03.4``, subtitles underneath."""
    if len(tiles) != len(frames):
        raise ValueError("one frame per tile is required")
    cols, rows = layout(len(tiles))
    canvas = Image.new("RGB", (cols * tile_px, rows * tile_px), _BG)
    draw = ImageDraw.Draw(canvas)
    label_size = max(10, tile_px // 10)
    sub_size = max(9, tile_px // 18)
    for slot, (tile, frame) in enumerate(zip(tiles, frames, strict=True)):
        row, col = divmod(slot, cols)
        x, y = col * tile_px, row * tile_px
        if frame.image is None:
            draw.rectangle((x, y, x + tile_px - 1, y + tile_px - 1), fill=_UNAVAILABLE_BG)
            _centered_text(draw, (x, y, x + tile_px, y + tile_px), "frame unavailable", sub_size, (230, 230, 230))
        else:
            _paste_centered(canvas, frame, x, y, tile_px)
        _label(draw, x + 2, y + 2, f"[{evidence_label(tile.index)}] {format_ts(tile.time, 1)}", label_size)
        if tile.subtitle:
            lines = _wrap(draw, tile.subtitle, sub_size, tile_px - 8, 3)
            line_h = sub_size + 4
            top = y + tile_px - line_h * len(lines) - 4
            draw.rectangle((x, top - 2, x + tile_px - 1, y + tile_px - 1), fill=_LABEL_BG)
            for j, line in enumerate(lines):
                draw.text((x + 4, top + j * line_h), line, fill=(255, 230, 120), font=load_font(sub_size))
    for i in range(1, cols):
        draw.line((i * tile_px, 0, i * tile_px, canvas.height), fill=_GRID_LINE, width=2)
    for i in range(1, rows):
        draw.line((0, i * tile_px, canvas.width, i * tile_px), fill=_GRID_LINE, width=2)
    return canvas


def encode_jpeg(image: Image.Image, quality: int = 85) -> bytes:
    """Deterministic baseline JPEG bytes (no EXIF, no timestamps, fixed settings)."""
    buf = io.BytesIO()
    image.save(buf, format="JPEG", quality=quality, optimize=False, progressive=False, subsampling="4:2:0")
    return buf.getvalue()
