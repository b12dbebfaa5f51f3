"""The ``chapters`` style of synthetic long videos with ground truth, deterministic by seed.

A synthetic video is a sequence of *chapters*, each with its own background colour and a large
title ("CHAPTER 3: VOLCANOES") that stays readable at contact-sheet scale, cut into scenes with
different shape layouts. On top of that, short *events* are shown for a few seconds:

* ``needle``: a code such as ``KX-4417`` on a white card, one per chapter (so every other
  chapter's code is a same-looking distractor);
* ``marker``: a red ``STAR`` badge, shown a known number of times;
* ``order``: two words on green cards in different chapters;
* ``anchor`` and ``after``: an orange ``BELL`` banner, immediately followed by a word on a blue
  card; the same kind of blue card shows the decoy words elsewhere.

Events last ``max(4 s, 1.25 x the span of a depth-1 cell)`` by default, so a needle is caught by
at least one cell once its root cell is expanded (about 4 s in a 1-hour video, 11 s in a 10-hour
one). Questions of four kinds are written with their answers and evidence intervals.

Frames are drawn once per visual state and re-encoded with new timestamps, and x264 runs with the
``ultrafast`` preset, so a 10-hour 640x360 video at 5 fps encodes in a few minutes on two cores.

This is the ``chapters`` style. ``SynthSpec(style="broadcast")`` selects the other one
(:mod:`videoatlas.synth.broadcast`): moving textures, varied layouts and fonts, and its
own vocabulary and wordings, for measuring the agent on video it was not developed against.
"""

from __future__ import annotations

import random
from pathlib import Path

import structlog
from PIL import Image, ImageDraw

from videoatlas.environment.render import draw_centered_text, load_font
from videoatlas.environment.subtitles import SubtitleLine
from videoatlas.errors import BadInputError
from videoatlas.synth.encode import Progress, StyleKit, stretches, write_frames
from videoatlas.synth.spec import Chapter, Event, Question, Scene, SynthSpec, Timeline, unique_code

log = structlog.get_logger(__name__)

TOPICS = (
    "VOLCANOES",
    "GLACIERS",
    "DESERTS",
    "OCEANS",
    "FORESTS",
    "CITIES",
    "RIVERS",
    "ISLANDS",
    "CANYONS",
    "PRAIRIES",
    "REEFS",
    "CAVES",
    "MOUNTAINS",
    "MARSHES",
    "TUNDRA",
    "SAVANNA",
    "LAGOONS",
    "DUNES",
    "FJORDS",
    "VALLEYS",
    "GEYSERS",
    "STEPPES",
    "ATOLLS",
    "DELTAS",
)
ORDER_WORDS = ("FALCON", "OTTER", "BADGER", "HERON", "LYNX", "MARMOT", "PELICAN", "WALRUS")
AFTER_WORDS = ("PURPLE", "SILVER", "CRIMSON", "AMBER", "TEAL", "IVORY", "OLIVE", "COPPER")
SCHEMA_VERSION = 2
"""Bumped whenever the same spec would draw different pixels (2: the STAR badge became a card)."""


def _palette(n: int, rng: random.Random) -> list[tuple[int, int, int]]:
    """``n`` well-separated, mid-dark background colours (white titles stay readable on them)."""
    import colorsys

    offset = rng.random()
    colours = []
    for i in range(n):
        hue = (offset + i * 0.618033988749895) % 1.0
        value = 0.42 if i % 2 else 0.58
        r, g, b = colorsys.hsv_to_rgb(hue, 0.65, value)
        colours.append((int(r * 255), int(g * 255), int(b * 255)))
    return colours


class _Placer:
    """Places events at random times inside chapters without overlaps (with padding between)."""

    def __init__(self, timeline: Timeline, rng: random.Random) -> None:
        self.timeline = timeline
        self.rng = rng
        self.taken: list[tuple[float, float]] = []

    def free(self, start: float, end: float, pad: float) -> bool:
        return all(end + pad <= s or start >= e + pad for s, e in self.taken)

    def try_place(self, chapter: Chapter, length: float, pad: float, tail: float = 0.0) -> float | None:
        """A start time in ``chapter`` where ``length + tail`` seconds are free, or None."""
        margin = min(10.0, (chapter.end - chapter.start) * 0.05)
        lo, hi = chapter.start + margin, chapter.end - margin - length - tail
        for _ in range(200):
            if hi <= lo:
                break
            start = round(self.rng.uniform(lo, hi), 2)
            if self.free(start, start + length + tail, pad):
                self.taken.append((start, start + length + tail))
                return start
        return None

    def place(self, chapters: list[Chapter], length: float, pad: float, tail: float = 0.0) -> tuple[Chapter, float]:
        """Place in the first of ``chapters`` (tried in the given order) that has room."""
        for chapter in chapters:
            start = self.try_place(chapter, length, pad, tail)
            if start is not None:
                return chapter, start
        raise BadInputError("the video is too short for its events; use a longer video or shorter events")

    def shuffled(self, chapters: list[Chapter]) -> list[Chapter]:
        out = list(chapters)
        self.rng.shuffle(out)
        return out


def plan_timeline(spec: SynthSpec) -> Timeline:
    """Lay out chapters, scenes, events and questions (no pixels yet)."""
    rng = random.Random(spec.seed)
    tl = Timeline(spec)
    dur = spec.duration
    ev = spec.event_duration
    n_ch = max(4, min(len(TOPICS), round(dur / 300)))
    titles = rng.sample(TOPICS, n_ch)
    colours = _palette(n_ch, rng)
    weights = [rng.uniform(0.8, 1.2) for _ in range(n_ch)]
    bounds = [0.0]
    for w in weights[:-1]:
        bounds.append(bounds[-1] + dur * w / sum(weights))
    bounds.append(dur)
    bounds = [round(b, 2) for b in bounds[:-1]] + [dur]
    for i in range(n_ch):
        tl.chapters.append(Chapter(i, titles[i], bounds[i], bounds[i + 1], colours[i]))
        t = bounds[i]
        while t < bounds[i + 1]:
            length = rng.uniform(20, 90)
            end = min(bounds[i + 1], t + length)
            if bounds[i + 1] - end < 10:
                end = bounds[i + 1]
            tl.scenes.append(Scene(i, t, end, rng.randrange(1 << 30)))
            t = end

    placer = _Placer(tl, rng)
    pad = max(1.0, ev / 2)
    used: set[str] = set()
    for ch in tl.chapters:
        _, start = placer.place([ch], ev, pad)
        tl.events.append(Event("needle", unique_code(rng, used), start, start + ev, ch.index))

    n_markers = rng.randint(2, min(6, n_ch))
    marker_chapters = placer.shuffled(tl.chapters)
    for i in range(n_markers):
        ch, start = placer.place(marker_chapters[i:] + marker_chapters[:i], ev, pad)
        tl.events.append(Event("marker", "STAR", start, start + ev, ch.index))

    words = rng.sample(ORDER_WORDS, 2)
    order_chapters = placer.shuffled(tl.chapters)
    first_ch, start = placer.place(order_chapters, ev, pad)
    tl.events.append(Event("order", words[0], start, start + ev, first_ch.index))
    rest = [c for c in order_chapters if c.index != first_ch.index]
    second_ch, start = placer.place(rest, ev, pad)
    tl.events.append(Event("order", words[1], start, start + ev, second_ch.index))

    after_words = rng.sample(AFTER_WORDS, 4)
    gap = 0.5
    anchor_ch, start = placer.place(placer.shuffled(tl.chapters), ev, pad, tail=gap + ev)
    tl.events.append(Event("anchor", "BELL", start, start + ev, anchor_ch.index))
    tl.events.append(Event("after", after_words[0], start + ev + gap, start + 2 * ev + gap, anchor_ch.index))
    for word in after_words[1:]:
        ch, s = placer.place(placer.shuffled(tl.chapters), ev, pad)
        tl.events.append(Event("decoy", word, s, s + ev, ch.index))
    tl.events.sort(key=lambda e: e.start)
    tl.questions = _questions(tl, rng, words, after_words)
    return tl


def _mc(rng: random.Random, correct: str, others: list[str]) -> tuple[list[str], int]:
    choices = [correct, *others]
    rng.shuffle(choices)
    return choices, choices.index(correct)


def _questions(tl: Timeline, rng: random.Random, order_words: list[str], after_words: list[str]) -> list[Question]:
    questions: list[Question] = []
    needles = [e for e in tl.events if e.kind == "needle"]
    for e in needles:
        title = tl.chapters[e.chapter].title
        others = rng.sample([n.text for n in needles if n is not e], min(3, len(needles) - 1))
        choices, idx = _mc(rng, e.text, others)
        questions.append(
            Question(
                f"needle-{e.chapter}",
                "needle_in_chapter",
                f"Which code is shown on a white card during the {title} chapter?",
                choices,
                idx,
                [[e.start, e.end]],
            )
        )
    markers = [e for e in tl.events if e.kind == "marker"]
    n = len(markers)
    options = sorted({n, n + 1, max(1, n - 1), n + 2} | ({n + 3} if n - 1 < 1 else set()))[:4]
    choices = [str(x) for x in options]
    rng.shuffle(choices)
    questions.append(
        Question(
            "count-star",
            "counting",
            "How many times does the red STAR badge appear in the video?",
            choices,
            choices.index(str(n)),
            [[m.start, m.end] for m in markers],
        )
    )
    ordered = sorted((e for e in tl.events if e.kind == "order"), key=lambda e: e.start)
    choices = list(order_words)
    rng.shuffle(choices)
    questions.append(
        Question(
            "order",
            "order",
            f"Which word appears first in the video: {order_words[0]} or {order_words[1]}?",
            choices,
            choices.index(ordered[0].text),
            [[e.start, e.end] for e in ordered],
        )
    )
    anchor = next(e for e in tl.events if e.kind == "anchor")
    after = next(e for e in tl.events if e.kind == "after")
    choices, idx = _mc(rng, after.text, after_words[1:])
    questions.append(
        Question(
            "after-bell",
            "after_anchor",
            "Which word is shown on a blue card right after the BELL banner?",
            choices,
            idx,
            [[anchor.start, anchor.end], [after.start, after.end]],
        )
    )
    return questions


# -- drawing -------------------------------------------------------------------------------------


def _card(
    draw: ImageDraw.ImageDraw,
    spec: SynthSpec,
    text: str,
    fill: tuple[int, int, int],
    fg: tuple[int, int, int],
) -> None:
    w, h = spec.width, spec.height
    size = max(12, h // 7)
    left, top, right, bottom = draw.textbbox((0, 0), text, font=load_font(size))
    pad = size // 2
    cw, ch = (right - left) + 2 * pad, (bottom - top) + 2 * pad
    cx, cy = w // 2, int(h * 0.6)
    draw.rounded_rectangle((cx - cw // 2, cy - ch // 2, cx + cw // 2, cy + ch // 2), radius=pad // 2, fill=fill)
    draw_centered_text(draw, cx, cy, text, size, fg)


def draw_state(tl: Timeline, scene: Scene, event: Event | None) -> Image.Image:
    """The picture shown during ``scene`` with ``event`` (or nothing) on top."""
    spec = tl.spec
    w, h = spec.width, spec.height
    ch = tl.chapters[scene.chapter]
    img = Image.new("RGB", (w, h), ch.color)
    draw = ImageDraw.Draw(img)
    rng = random.Random(scene.layout_seed)
    for _ in range(5):
        x0, y0 = rng.randrange(0, w), rng.randrange(h // 4, h)
        size = rng.randrange(h // 10, h // 3)
        shade = tuple(max(0, min(255, c + rng.randrange(-60, 61))) for c in ch.color)
        if rng.random() < 0.5:
            draw.ellipse((x0, y0, x0 + size, y0 + size), fill=shade)
        else:
            draw.rectangle((x0, y0, x0 + size, y0 + size // 2), fill=shade)
    bar = h // 5
    draw.rectangle((0, 0, w, bar), fill=(0, 0, 0))
    draw_centered_text(draw, w // 2, bar // 2, f"CHAPTER {ch.index + 1}: {ch.title}", max(12, h // 9), (255, 255, 255))
    if event is not None:
        if event.kind == "needle":
            _card(draw, spec, event.text, (255, 255, 255), (0, 0, 0))
        elif event.kind == "marker":
            _card(draw, spec, "STAR", (220, 20, 20), (255, 255, 255))
        elif event.kind == "order":
            _card(draw, spec, event.text, (30, 150, 60), (255, 255, 255))
        elif event.kind == "anchor":
            top = int(h * 0.45)
            draw.rectangle((0, top, w, top + h // 4), fill=(245, 140, 20))
            draw_centered_text(draw, w // 2, top + h // 8, "BELL", max(12, h // 6), (0, 0, 0))
        elif event.kind in ("after", "decoy"):
            _card(draw, spec, event.text, (30, 70, 200), (255, 255, 255))
    return img


def narration(tl: Timeline) -> list[SubtitleLine]:
    """Narration lines: one at the start of every scene, naming its chapter."""
    lines = []
    part: dict[int, int] = {}
    for scene in tl.scenes:
        part[scene.chapter] = part.get(scene.chapter, 0) + 1
        title = tl.chapters[scene.chapter].title.lower()
        end = min(scene.end, scene.start + 4.0)
        lines.append(SubtitleLine(scene.start, end, f"This is part {part[scene.chapter]} about {title}."))
    return lines


def _write_video(path: Path, spec: SynthSpec, tl: Timeline, progress: Progress | None) -> int:
    """Encode the chapters-style pictures: one drawn per stretch of frames that look the same."""
    states = ((a, b, draw_state(tl, scene, event)) for a, b, scene, event in stretches(tl))
    return write_frames(path, spec, states, progress)


STYLE = StyleKit(
    "chapters",
    SCHEMA_VERSION,
    plan_timeline,
    lambda tl: tl,
    _write_video,
    narration,
    lambda spec: spec.event_duration,
)
"""How :func:`videoatlas.synth.synthesize` makes a chapters-style video."""
