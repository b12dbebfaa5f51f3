"""A short generated video laid out so that a careful searcher needs every worker action.

320 s at 20 fps, 640x360, plain dark frames with a few big signs and one line of small print:

* 40-60 s: a HARBOR banner; 48-52 s: a tag in small type under it (legible only at full size: ZOOM);
* 123.7-124.95 s: a QUARRY banner alone; 129.95-131.2 s: the banner again, and for a quarter of a
  second (130.30-130.55 s) a code card with it (seen only in a finer grid: EXPAND, and BACKTRACK
  from the first banner, which holds nothing);
* 217.6-219.9 s: a LANTERN sign at the very end of its 20 s root cell; 220.4-222 s: the word shown
  right after it (INVESTIGATE after); the same kind of word card elsewhere as decoys.

With K = 4 the root cells last 20 s, depth-1 cells 1.25 s and depth-2 cells 0.078 s.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw

from videoatlas.environment.render import load_font
from videoatlas.synth import SynthSpec
from videoatlas.synth.encode import write_frames

DURATION = 320.0
SIZE = (640, 360)


@dataclass(frozen=True)
class Sign:
    """Text drawn over ``[start, end)``: ``size`` px tall, its box's centre at ``(x, y)``."""

    start: float
    end: float
    text: str
    size: int
    x: int
    y: int
    fill: tuple[int, int, int] = (250, 250, 250)
    card: tuple[int, int, int] | None = None


SIGNS = (
    Sign(40.0, 60.0, "HARBOR", 56, 320, 70, card=(20, 60, 140)),
    Sign(48.0, 52.0, "tag QZ-7781", 13, 320, 300),
    Sign(123.7, 124.95, "QUARRY", 56, 320, 70, card=(130, 80, 20)),
    Sign(129.95, 131.2, "QUARRY", 56, 320, 70, card=(130, 80, 20)),
    Sign(130.30, 130.55, "RX-5521", 48, 320, 220, fill=(0, 0, 0), card=(250, 250, 250)),
    Sign(100.0, 102.0, "MAROON", 52, 320, 200, card=(30, 110, 60)),
    Sign(217.6, 219.9, "LANTERN", 56, 320, 180, fill=(0, 0, 0), card=(240, 170, 30)),
    Sign(220.4, 222.0, "COBALT", 52, 320, 200, card=(30, 110, 60)),
    Sign(290.0, 292.0, "SAFFRON", 52, 320, 200, card=(30, 110, 60)),
)
QUESTIONS = {
    "zoom": ("Which tag is printed in small type under the HARBOR banner?", ["QZ-1234", "QZ-7781", "MT-7781"], 1),
    "expand": ("Which code is shown together with the QUARRY banner?", ["KT-5521", "RX-9921", "RX-5521"], 2),
    "after": ("Which word is shown right after the LANTERN sign?", ["MAROON", "COBALT", "SAFFRON"], 1),
}


def _draw(active: list[Sign]) -> Image.Image:
    """One frame showing the ``active`` signs."""
    img = Image.new("RGB", SIZE, (38, 40, 46))
    draw = ImageDraw.Draw(img)
    for sign in active:
        font = load_font(sign.size)
        left, top, right, bottom = draw.textbbox((0, 0), sign.text, font=font)
        w, h = right - left, bottom - top
        if sign.card is not None:
            pad = sign.size // 3
            box = (sign.x - w // 2 - pad, sign.y - h // 2 - pad, sign.x + w // 2 + pad, sign.y + h // 2 + pad)
            draw.rectangle(box, fill=sign.card)
        draw.text((sign.x - w // 2 - left, sign.y - h // 2 - top), sign.text, fill=sign.fill, font=font)
    return img


def _states(signs: tuple[Sign, ...], duration: float) -> Iterator[tuple[float, float, Image.Image]]:
    cuts = sorted({0.0, duration, *(s.start for s in signs), *(s.end for s in signs)})
    for a, b in itertools.pairwise(cuts):
        mid = (a + b) / 2
        yield a, b, _draw([s for s in signs if s.start <= mid < s.end])


def write_signs_video(path: Path, signs: tuple[Sign, ...], duration: float) -> Path:
    """A plain dark video showing ``signs``, each over its own time span."""
    spec = SynthSpec(duration=duration, width=SIZE[0], height=SIZE[1], fps=20.0, gop_s=1.0, subtitles=False)
    write_frames(path, spec, _states(signs, duration))
    return path


def write_action_video(path: Path) -> Path:
    """Encode the video to ``path`` (about ten seconds on two cores)."""
    return write_signs_video(path, SIGNS, DURATION)
