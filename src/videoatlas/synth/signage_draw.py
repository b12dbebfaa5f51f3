"""Pixels of the signage-style synthetic video: gradients with a sliding light band, a status strip, sliding cards.

Built on the broadcast style's frame machinery (a panned background kept as YUV planes, pre-rendered
sprites blended in place: :class:`~.broadcast_draw.Texture`, :class:`~.broadcast_draw.Sprite`), with
its own look: serif (STIX) and monospaced faces from matplotlib's bundled fonts, deep two-tone
gradients, cards that slide in from the right over their first frames and rest in one of three bays.
"""

from __future__ import annotations

import colorsys

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from videoatlas.synth.broadcast_draw import Sprite, Texture, font, to_yuv
from videoatlas.synth.spec import Event

RGB = tuple[int, int, int]
BAYS: tuple[tuple[float, float, str], ...] = ((0.06, 0.26, "left"), (0.5, 0.42, "center"), (0.94, 0.6, "right"))
"""Where a card rests: (x, y) as fractions of the frame, and which side of the card sits at x."""
SLIDE_FRAMES = 4
"""Frames a card takes to slide into its bay."""
SERIF = "STIXGeneralBol"
MONO = "DejaVuSansMono-Bold"

_BLACK: RGB = (8, 8, 10)
_WHITE: RGB = (250, 250, 245)
# kind -> (panel, ink, header); decoys look exactly like what they are mistaken for.
_CARDS: dict[str, tuple[RGB, RGB, str]] = {
    "needle": ((255, 214, 10), _BLACK, "LOCKER"),
    "count": ((0, 178, 214), _WHITE, ""),
    "count_decoy": ((0, 178, 214), _WHITE, ""),
    "order": ((18, 32, 84), _WHITE, "DEPARTURE"),
    "anchor": ((196, 18, 32), _WHITE, ""),
    "after": ((98, 36, 150), _WHITE, "PLATFORM"),
    "platform_decoy": ((98, 36, 150), _WHITE, "PLATFORM"),
    "route": ((28, 150, 76), _WHITE, ""),
    "gate": ((255, 128, 0), _BLACK, ""),
}


def _chroma(plane: np.ndarray) -> np.ndarray:
    """2x2 means: a chroma plane at the 4:2:0 grid (the plane's sides are even)."""
    h, w = plane.shape
    return np.asarray(plane.reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3)))


def _face(name: str, size: int) -> ImageFont.FreeTypeFont:
    return font(name, size)


def hall_texture(seed: int, colour: RGB, width: int, height: int) -> Texture:
    """A vertical two-tone gradient around ``colour`` crossed by a soft diagonal light band sliding sideways."""
    rng = np.random.default_rng(seed)
    period = max(64, (width // 2) // 16 * 16)
    hue, sat, _ = colorsys.rgb_to_hsv(*(c / 255 for c in colour))
    hue = (hue + float(rng.uniform(-0.05, 0.05))) % 1.0
    top = np.array(colorsys.hsv_to_rgb(hue, min(1.0, sat + 0.2), 0.22), dtype=np.float32) * 255
    bottom = np.array(colorsys.hsv_to_rgb((hue + 0.08) % 1.0, min(1.0, sat + 0.35), 0.42), dtype=np.float32) * 255
    rows, cols = height + period, width + period
    ys = np.minimum(np.arange(rows, dtype=np.float32) / max(1, height - 1), 1.0)[:, None, None]
    base = top + (bottom - top) * ys
    xs = np.arange(cols, dtype=np.float32)[None, :]
    diag = (xs + 0.5 * np.arange(rows, dtype=np.float32)[:, None]) % period / period
    band = np.exp(-(((diag - 0.5) / 0.09) ** 2))[:, :, None]
    rgb = np.clip(base + 38.0 * band, 0, 255).round()
    y, u, v = to_yuv(rgb)
    planes = (
        np.ascontiguousarray(np.rint(y).astype(np.uint8)),
        np.ascontiguousarray(np.rint(_chroma(u)).astype(np.uint8)),
        np.ascontiguousarray(np.rint(_chroma(v)).astype(np.uint8)),
    )
    speed = float(rng.uniform(10.0, 22.0))
    return Texture(planes, period, (float(rng.uniform(0, period)), 0.0), (speed, 0.0))


def status_sprite(title: str, colour: RGB, width: int, height: int) -> Sprite | None:
    """The hall's status strip across the top: its name in serif capitals over a thin coloured rule."""
    layer = Image.new("RGBA", (width, height), (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    bar = max(16, int(height * 0.12))
    draw.rectangle((0, 0, width, bar), fill=(20, 20, 24, 235))
    draw.rectangle((0, bar - max(2, bar // 10), width, bar), fill=(*colour, 255))
    face = _face(SERIF, max(10, int(bar * 0.55)))
    left, top, _right, bottom = face.getbbox(title)
    draw.text((width // 30 - left, (bar - (bottom - top)) // 2 - top), title, font=face, fill=(*_WHITE, 255))
    small = _face(MONO, max(8, int(bar * 0.32)))
    tag = "INFORMATION"
    l2, t2, r2, b2 = small.getbbox(tag)
    draw.text((width - width // 30 - (r2 - l2) - l2, (bar - (b2 - t2)) // 2 - t2), tag, font=small, fill=(*colour, 255))
    return Sprite.from_layer(layer)


def card_image(event: Event, height: int) -> Image.Image:
    """The picture of one event's card (each kind has its own shape and colours; decoys share theirs)."""
    panel, ink, header = _CARDS.get(event.kind, ((60, 60, 60), _WHITE, ""))
    main = _face(MONO if event.kind in ("needle", "anchor", "gate", "route") else SERIF, max(12, height // 8))
    small = _face(MONO, max(8, height // 18))
    pad = max(6, height // 28)
    left, top, right, bottom = main.getbbox(event.text)
    tw, th = int(right - left), int(bottom - top)
    hh = 0
    if header:
        _, ht, _, hb = small.getbbox(header)
        hh = int(hb - ht) + pad
    w, h = tw + 4 * pad, th + hh + 3 * pad
    if event.kind in ("count", "count_decoy"):  # a badge: a flattened diamond behind the word
        w, h = tw + 8 * pad, th + 6 * pad
    image = Image.new("RGBA", (w, h), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    if event.kind in ("count", "count_decoy"):
        draw.polygon([(w // 2, 0), (w - 1, h // 2), (w // 2, h - 1), (0, h // 2)], fill=(*panel, 255))
        draw.text(((w - tw) // 2 - left, (h - th) // 2 - top), event.text, font=main, fill=(*ink, 255))
        return image
    if event.kind == "route":
        draw.rounded_rectangle((0, 0, w - 1, h - 1), radius=h // 2, fill=(*panel, 255))
    else:
        draw.rectangle((0, 0, w - 1, h - 1), fill=(*panel, 255))
        draw.rectangle((0, 0, max(3, pad // 2), h - 1), fill=(*_WHITE, 255))
    if event.kind == "needle":  # a tag's punched hole
        draw.ellipse((w - 2 * pad, pad // 2, w - pad, pad // 2 + pad), fill=(0, 0, 0, 0))
    y = pad
    if header:
        hl, ht, _, _ = small.getbbox(header)
        draw.text((2 * pad - hl, y - ht), header, font=small, fill=(*ink, 255))
        y += hh
    draw.text((2 * pad - left, y - top), event.text, font=main, fill=(*ink, 255))
    return image


def card_sprites(event: Event, bay: int, width: int, height: int) -> list[Sprite]:
    """The card sliding into its bay over :data:`SLIDE_FRAMES` frames, then resting there (the last sprite)."""
    card = card_image(event, height)
    fx, fy, align = BAYS[bay]
    cw, ch = card.size
    x = int(fx * width) - (cw if align == "right" else cw // 2 if align == "center" else 0)
    y = int(fy * height)
    x = max(0, min(width - cw, x))
    y = max(int(height * 0.14), min(height - ch, y))
    room = width - cw - x
    sprites = []
    for j in range(SLIDE_FRAMES + 1):
        dx = int(min(room, width // 8) * (1 - j / SLIDE_FRAMES))
        layer = Image.new("RGBA", (width, height), (0, 0, 0, 0))
        layer.alpha_composite(card, (x + dx, y))
        sprite = Sprite.from_layer(layer)
        if sprite is not None:
            sprites.append(sprite)
    return sprites
