"""Pixels of the broadcast-style synthetic video: moving textures, bundled fonts, straps, tags and panels.

Every frame is a window into a precomputed, seamlessly repeating texture that pans at a constant
velocity, with pre-rendered *sprites* (the segment's title graphics and the current event) blended on
top. Textures and sprites are made once per shot and per event with numpy and Pillow, and kept as
the encoder's own YUV 4:2:0 planes, so a frame costs three slices, a few small integer blends and
the encoder (no colour conversion per frame): a 10-hour video stays a matter of minutes.

Fonts are the DejaVu TrueType files inside the matplotlib wheel, so no system font is needed.
"""

from __future__ import annotations

import colorsys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

import av
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from videoatlas.synth.spec import Event

Layout = Literal["lower_third", "corner_tag", "side_panel", "headline_bar"]
LAYOUTS: tuple[Layout, ...] = ("lower_third", "corner_tag", "side_panel", "headline_bar")
TITLE_FONTS = ("DejaVuSans-Bold", "DejaVuSerif-Bold", "DejaVuSansMono-Bold", "DejaVuSans-BoldOblique")
PATTERNS = ("stripes", "checker", "clouds", "dots", "waves")
Align = Literal["left", "center", "right"]
RGB = tuple[int, int, int]

# Where events may appear in each layout: (x, y) as fractions of the frame, and which side of the
# sprite sits at x. Chosen so that no slot covers the layout's own title graphics.
SLOTS: dict[Layout, tuple[tuple[float, float, Align], ...]] = {
    "lower_third": ((0.05, 0.24, "left"), (0.95, 0.24, "right"), (0.5, 0.47, "center"), (0.95, 0.52, "right")),
    "corner_tag": ((0.05, 0.32, "left"), (0.5, 0.58, "center"), (0.05, 0.8, "left"), (0.95, 0.78, "right")),
    "side_panel": ((0.32, 0.24, "center"), (0.04, 0.55, "left"), (0.6, 0.55, "right"), (0.32, 0.82, "center")),
    "headline_bar": ((0.05, 0.42, "left"), (0.95, 0.42, "right"), (0.5, 0.72, "center"), (0.95, 0.8, "right")),
}

_AMBER = (255, 196, 0)
_LIME = (175, 235, 35)
_MAGENTA = (205, 30, 140)
_TEAL = (0, 100, 112)
_INK = (12, 12, 16)
_WHITE = (255, 255, 255)


@dataclass(frozen=True, slots=True)
class Look:
    """How one segment looks: where its title sits, in which font, with which colours."""

    layout: Layout
    title_font: str
    accent: RGB
    hue: float
    """Base hue of the segment's background textures."""


Planes = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Y at full size, U and V at half width and height (YUV 4:2:0), uint8."""


def to_yuv(rgb: np.ndarray) -> Planes:
    """Full-resolution Y, U, V (BT.601, limited range: what the encoder's own conversion uses), float32."""
    rgb = rgb.astype(np.float32)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    y = 16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255
    u = 128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255
    v = 128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255
    return y, u, v


def _half(plane: np.ndarray) -> np.ndarray:
    """2x2 means (the 4:2:0 chroma grid); the plane's sides must be even."""
    h, w = plane.shape
    return np.asarray(plane.reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3)))


def frame_planes(frame: av.VideoFrame) -> Planes:
    """Writable views of a yuv420p frame's planes, without their line padding."""
    views = []
    for plane in frame.planes:
        buffer = np.frombuffer(memoryview(plane), np.uint8).reshape(plane.height, plane.line_size)
        views.append(buffer[:, : plane.width])
    return views[0], views[1], views[2]


@dataclass(frozen=True, slots=True)
class Texture:
    """A background that repeats every ``period`` pixels both ways and pans at ``velocity`` px/s."""

    planes: Planes
    """Y of ``(height + period, width + period)``, U and V at half that, so any window is one slice."""
    period: int
    origin: tuple[float, float]
    velocity: tuple[float, float]

    def paint(self, t: float, out: Planes) -> None:
        """Copy the view at time ``t`` into ``out`` (a frame's planes)."""
        # Even offsets keep luma and chroma windows aligned; the period is even, so they wrap cleanly.
        x = (round(self.origin[0] + self.velocity[0] * t) % self.period) & ~1
        y = (round(self.origin[1] + self.velocity[1] * t) % self.period) & ~1
        for i, (src, dst) in enumerate(zip(self.planes, out, strict=True)):
            s = 1 if i == 0 else 2
            h, w = dst.shape
            np.copyto(dst, src[y // s : y // s + h, x // s : x // s + w])


@dataclass(frozen=True, slots=True)
class Sprite:
    """A pre-rendered picture at a fixed, even place, stored as YUV ready for integer alpha blends."""

    x: int
    y: int
    ink: Planes
    """Each plane's value times alpha (alpha on a 0..256 scale), uint16."""
    keep: tuple[np.ndarray, np.ndarray]
    """``256 - alpha`` for luma and for the (2x2-averaged) chroma, uint16."""

    @classmethod
    def from_layer(cls, layer: Image.Image) -> Sprite | None:
        """The visible part of a frame-sized RGBA ``layer``; None when nothing is visible."""
        box = layer.getbbox()
        if box is None:
            return None
        x0, y0 = box[0] & ~1, box[1] & ~1
        x1, y1 = box[2] + (box[2] & 1), box[3] + (box[3] & 1)
        rgba = np.asarray(layer.crop((x0, y0, x1, y1)), dtype=np.float32)
        alpha = rgba[:, :, 3] / 255
        y, u, v = to_yuv(rgba[:, :, :3])
        chroma_alpha = _half(alpha)

        def scaled(value: np.ndarray) -> np.ndarray:
            out: np.ndarray = np.rint(value * 256).astype(np.uint16)
            return out

        ink = (scaled(y * alpha), scaled(_half(u * alpha)), scaled(_half(v * alpha)))
        return cls(x0, y0, ink, (scaled(1 - alpha), scaled(1 - chroma_alpha)))

    def paint(self, planes: Planes) -> None:
        """Blend onto a frame's planes in place (the sprite lies inside the frame)."""
        for i, (plane, ink) in enumerate(zip(planes, self.ink, strict=True)):
            s = 1 if i == 0 else 2
            h, w = ink.shape
            region = plane[self.y // s : self.y // s + h, self.x // s : self.x // s + w]
            # keep + alpha == 256, so the sum stays below 2**16 and the shift divides by 256.
            region[...] = (region * self.keep[min(i, 1)] + ink) >> 8


@lru_cache(maxsize=64)
def font(name: str, size: int) -> ImageFont.FreeTypeFont:
    """A DejaVu face from matplotlib's bundled fonts (present wherever matplotlib is installed)."""
    import matplotlib

    return ImageFont.truetype(str(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / f"{name}.ttf"), size)


# -- textures ------------------------------------------------------------------------------------


def _pattern(kind: str, period: int, rng: np.random.Generator) -> np.ndarray:
    """A ``period x period`` float map in [0, 1] that tiles seamlessly."""
    coords = np.arange(period, dtype=np.float32) * (2 * np.pi / period)
    x, y = coords[None, :], coords[:, None]
    if kind == "stripes":
        kx, ky = int(rng.integers(1, 5)), int(rng.integers(-4, 5))
        value = np.tanh(float(rng.uniform(1.0, 4.0)) * np.sin(kx * x + ky * y))
    elif kind == "checker":
        n = int(rng.choice([2, 3, 4]))
        value = np.tanh(6.0 * np.sin(n * x) * np.sin(n * y))
    elif kind == "waves":
        a, b = int(rng.integers(2, 6)), int(rng.integers(1, 3))
        value = np.sin(a * y + 1.5 * np.sin(b * x))
    elif kind == "dots":
        n = int(rng.choice([3, 4, 5]))
        value = np.cos(n * x) + np.cos(n * y)
        value = np.tanh(2.0 * (value - 1.0))
    else:  # clouds: white noise low-passed in the Fourier domain, hence periodic
        freq = np.fft.fftfreq(period)[:, None] ** 2 + np.fft.fftfreq(period)[None, :] ** 2
        spectrum = np.fft.fft2(rng.standard_normal((period, period))) * np.exp(-freq * (period / 6.0) ** 2)
        value = np.real(np.fft.ifft2(spectrum)).astype(np.float32)
    lo, hi = float(value.min()), float(value.max())
    return ((value - lo) / max(hi - lo, 1e-6)).astype(np.float32)


def _tone(hue: float, saturation: float, value: float) -> np.ndarray:
    r, g, b = colorsys.hsv_to_rgb(hue % 1.0, saturation, value)
    return np.array([r, g, b], dtype=np.float32) * 255


def make_texture(seed: int, hue: float, width: int, height: int) -> Texture:
    """The background of one shot: a two-tone pattern around ``hue``, panning at 8-40 px/s."""
    rng = np.random.default_rng(seed)
    period = max(64, (height * 3 // 4) // 16 * 16)
    kind = str(rng.choice(PATTERNS))
    value = _pattern(kind, period, rng)
    # Mid-dark tones 50-80 levels apart: clearly textured, yet calm behind outlined white text.
    dark = _tone(hue + float(rng.uniform(-0.04, 0.04)), float(rng.uniform(0.45, 0.75)), float(rng.uniform(0.22, 0.3)))
    light = _tone(hue + float(rng.uniform(0.04, 0.12)), float(rng.uniform(0.35, 0.6)), float(rng.uniform(0.5, 0.58)))
    tile = (dark + (light - dark) * value[:, :, None]).round()
    y, u, v = to_yuv(tile)
    reps = (-(-(height + period) // period), -(-(width + period) // period))
    planes = []
    for plane, s in ((y, 1), (_half(u), 2), (_half(v), 2)):
        whole = np.tile(np.rint(plane).astype(np.uint8), reps)
        planes.append(np.ascontiguousarray(whole[: (height + period) // s, : (width + period) // s]))
    speed, angle = float(rng.uniform(8.0, 40.0)), float(rng.uniform(0, 2 * np.pi))
    origin = (float(rng.uniform(0, period)), float(rng.uniform(0, period)))
    velocity = (speed * np.cos(angle), speed * np.sin(angle))
    return Texture((planes[0], planes[1], planes[2]), period, origin, velocity)


# -- title graphics ------------------------------------------------------------------------------


def _text_size(text: str, face: ImageFont.FreeTypeFont, stroke: int = 0) -> tuple[int, int, int, int]:
    left, top, right, bottom = face.getbbox(text, stroke_width=stroke)
    return int(left), int(top), int(right - left), int(bottom - top)


def _put(
    draw: ImageDraw.ImageDraw,
    x: int,
    y: int,
    text: str,
    face: ImageFont.FreeTypeFont,
    fill: RGB,
    stroke: int = 0,
) -> tuple[int, int]:
    """Draw ``text`` with its ink's top-left at ``(x, y)``; returns the ink's width and height."""
    left, top, w, h = _text_size(text, face, stroke)
    draw.text((x - left, y - top), text, font=face, fill=fill, stroke_width=stroke, stroke_fill=_INK)
    return w, h


def _darker(colour: RGB, factor: float) -> RGB:
    return (int(colour[0] * factor), int(colour[1] * factor), int(colour[2] * factor))


def title_sprite(look: Look, title: str, width: int, height: int) -> Sprite | None:
    """The segment's title graphics, drawn the way its layout places them."""
    layer = Image.new("RGBA", (width, height), (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    face = font(look.title_font, max(10, height // 9))
    small = font("DejaVuSans-Bold", max(8, height // 16))
    pad = max(4, height // 40)
    _, _, tw, th = _text_size(title, face)
    if look.layout == "lower_third":
        x0, y1 = width // 25, int(height * 0.9)
        y0 = y1 - th - 2 * pad
        _, _, lw, _ = _text_size("LIVE", small)
        draw.rectangle((x0, y0, x0 + lw + 2 * pad, y1), fill=(*_WHITE, 255))
        _put(draw, x0 + pad, (y0 + y1) // 2 - _text_size("LIVE", small)[3] // 2, "LIVE", small, look.accent)
        x1 = x0 + lw + 2 * pad
        draw.rectangle((x1, y0, x1 + tw + 3 * pad, y1), fill=(*look.accent, 240))
        draw.rectangle((x1, y0, x1 + tw + 3 * pad, y0 + max(2, pad // 2)), fill=(*_WHITE, 255))
        _put(draw, x1 + pad + pad // 2, y0 + pad, title, face, _WHITE)
    elif look.layout == "corner_tag":
        x1, y0 = width - width // 25, height // 25
        box = (x1 - tw - 2 * pad, y0, x1, y0 + th + 3 * pad)
        draw.rounded_rectangle(box, radius=pad, fill=(*_INK, 210))
        draw.rectangle((box[0] + pad, box[3] - pad, box[2] - pad, box[3] - pad // 2), fill=(*look.accent, 255))
        _put(draw, box[0] + pad, y0 + pad, title, face, _WHITE)
    elif look.layout == "side_panel":
        x0 = int(width * 0.64)
        draw.rectangle((x0, 0, width, height), fill=(*_darker(look.accent, 0.45), 215))
        draw.rectangle((x0, 0, x0 + max(2, pad // 2), height), fill=(*look.accent, 255))
        y = height // 10
        for word in title.split():
            _, h = _put(draw, x0 + 2 * pad, y, word, face, _WHITE)
            y += h + 2 * pad
    else:  # headline_bar
        bar = int(height * 0.17)
        draw.rectangle((0, 0, width, bar), fill=(*_INK, 230))
        draw.rectangle((0, 0, pad * 2, bar), fill=(*look.accent, 255))
        draw.rectangle((0, bar - max(2, pad // 2), width, bar), fill=(*look.accent, 255))
        _put(draw, pad * 5, (bar - th) // 2, title, face, _lighter(look.accent))
    return Sprite.from_layer(layer)


def _lighter(colour: RGB) -> RGB:
    return (int(colour[0] * 0.35 + 166), int(colour[1] * 0.35 + 166), int(colour[2] * 0.35 + 166))


# -- event graphics ------------------------------------------------------------------------------


def _stack(
    lines: list[tuple[str, ImageFont.FreeTypeFont, RGB, int]],
    pad: int,
    panel: RGB | None,
    border: RGB | None = None,
) -> Image.Image:
    """Lines of text centred above each other, on a panel or (``panel=None``) directly, outlined."""
    sizes = [_text_size(text, face, stroke) for text, face, _, stroke in lines]
    gap = pad  # a clear gap between lines, so they read as separate lines
    w = max(s[2] for s in sizes) + 2 * pad
    h = sum(s[3] for s in sizes) + gap * (len(lines) - 1) + 2 * pad
    image = Image.new("RGBA", (w, h), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    if panel is not None:
        width = max(2, pad // 4) if border else 0
        draw.rounded_rectangle((0, 0, w - 1, h - 1), radius=pad // 2, fill=(*panel, 255), outline=border, width=width)
    y = pad
    for (text, face, fill, stroke), (_, _, tw, th) in zip(lines, sizes, strict=True):
        _put(draw, (w - tw) // 2, y, text, face, fill, stroke)
        y += th + gap
    return image


def _replay_strap(text: str, height: int) -> Image.Image:
    """A slanted magenta strap with white italic lettering."""
    face = font("DejaVuSans-BoldOblique", max(10, height // 8))
    pad = max(4, height // 30)
    _, _, tw, th = _text_size(text, face)
    slant = th // 2
    w, h = tw + 4 * pad + 2 * slant, th + 2 * pad
    image = Image.new("RGBA", (w, h), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    draw.polygon([(slant, 0), (w - 1, 0), (w - 1 - slant, h - 1), (0, h - 1)], fill=(*_MAGENTA, 255))
    draw.line([(slant, 0), (w - 1, 0)], fill=(*_WHITE, 255), width=max(2, pad // 3))
    _put(draw, slant + 2 * pad, pad, text, face, _WHITE)
    return image


def event_image(event: Event, height: int) -> Image.Image:
    """The picture of one event, before placing (each kind has its own look; decoys share theirs)."""
    main, header = max(10, height // 8), max(8, height // 12)
    pad = max(4, height // 30)
    if event.kind == "needle":
        return _stack(
            [
                ("FLIGHT", font("DejaVuSans-Bold", header), _darker(_AMBER, 0.8), 0),
                (event.text, font("DejaVuSansMono-Bold", main), _AMBER, 0),
            ],
            pad,
            (16, 18, 26),
            _AMBER,
        )
    if event.kind == "marker":
        return _stack([(event.text, font("DejaVuSans-Bold", main), _INK, 0)], pad, _LIME, _INK)
    if event.kind == "order":
        stroke = max(2, height // 100)
        return _stack(
            [
                ("FORECAST", font("DejaVuSerif-Bold", header), _WHITE, max(1, stroke - 1)),
                (event.text, font("DejaVuSerif-Bold", main), _WHITE, stroke),
            ],
            pad,
            None,
        )
    if event.kind == "anchor":
        return _replay_strap(event.text, height)
    # The answer next to the anchor and the decoys elsewhere look the same on purpose.
    return _stack(
        [
            ("PLAYER", font("DejaVuSans-Bold", header), (150, 225, 230), 0),
            (event.text, font("DejaVuSans-Bold", main), _WHITE, 0),
        ],
        pad,
        _TEAL,
        _WHITE,
    )


def event_sprite(event: Event, look: Look, slot: int, width: int, height: int) -> Sprite | None:
    """``event``'s picture at slot ``slot`` of its segment's layout, kept inside the frame."""
    image = event_image(event, height)
    fx, fy, align = SLOTS[look.layout][slot % len(SLOTS[look.layout])]
    ax, ay = int(fx * width), int(fy * height)
    x = ax if align == "left" else ax - image.width if align == "right" else ax - image.width // 2
    y = ay - image.height // 2
    margin = max(2, height // 60)
    x = max(margin, min(width - image.width - margin, x))
    y = max(margin, min(height - image.height - margin, y))
    layer = Image.new("RGBA", (width, height), (0, 0, 0, 0))
    layer.paste(image, (x, y))
    return Sprite.from_layer(layer)


def palette(n: int, offset: float) -> list[tuple[RGB, float]]:
    """``n`` (accent colour, texture hue) pairs, neighbours far apart on the colour wheel."""
    out = []
    for i in range(n):
        hue = (offset + i * 0.381966) % 1.0
        r, g, b = colorsys.hsv_to_rgb((hue + 0.5) % 1.0, 0.85, 0.8)
        out.append(((int(r * 255), int(g * 255), int(b * 255)), hue))
    return out
