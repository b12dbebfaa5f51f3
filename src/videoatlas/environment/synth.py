"""Synthetic long videos with ground truth, deterministic by seed, for the demo, tests and benchmarks.

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
(:mod:`videoatlas.environment.synth_broadcast`): moving textures, varied layouts and fonts, and its
own vocabulary and wordings, for measuring the agent on video it was not developed against.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import string
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import av
import numpy as np
import structlog
from PIL import Image, ImageDraw

from videoatlas import limits
from videoatlas.environment.geometry import cell_span
from videoatlas.environment.render import draw_centered_text, load_font
from videoatlas.environment.subtitles import SubtitleLine, write_srt
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import BadInputError

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

Style = Literal["chapters", "broadcast"]
"""Which generator draws the video: ``chapters`` (this module) or ``broadcast``."""
STYLES: tuple[Style, ...] = get_args(Style)

Codec = Literal["h264", "hevc", "vp9"]
"""Which encoder writes the video: libx264, libx265 or libvpx-vp9 (all ship in PyAV's wheels)."""
CODECS: tuple[Codec, ...] = get_args(Codec)


@dataclass(frozen=True, slots=True)
class SynthSpec:
    """Everything that determines a synthetic video; the same spec always gives the same file."""

    duration: float
    seed: int = 1
    width: int = 640
    height: int = 360
    fps: float = 5.0
    """Use :func:`default_fps` for a rate that keeps long videos quick to make."""
    gop_s: float = 10.0
    scenecut: bool = True
    event_s: float | None = None
    """How long events last (chapters style) or last at least (broadcast style); None: long enough for the video."""
    subtitles: bool = True
    crf: int = 28
    style: Style = "chapters"
    codec: Codec = "h264"
    """VP9 goes into Matroska or WebM: give such a path (the counter video) rather than ``.mp4``."""
    bframes: int = 0
    """B-frames between reference frames. 0: x264 ``ultrafast`` without them (quickest to make). More:
    the encoder's usual B-frame structure (x264 ``veryfast`` or x265 ``ultrafast``: B-pyramid, adaptive
    placement), as in most video found in the wild."""
    open_gop: bool = False
    """Keyframes that B-frames of the previous GOP may reference (x265's default; x264's ``open-gop``)."""

    def __post_init__(self) -> None:
        limits.check_synth(self.duration, self.fps, self.width, self.height)
        if self.gop_s <= 0:
            raise BadInputError("keyframe interval must be positive")
        if self.style not in STYLES:
            raise BadInputError(f"unknown synthetic style {self.style!r}; choose one of {', '.join(STYLES)}")
        if self.codec not in CODECS:
            raise BadInputError(f"unknown codec {self.codec!r}; choose one of {', '.join(CODECS)}")
        if not 0 <= self.bframes <= 16:
            raise BadInputError(f"B-frames must be between 0 and 16, got {self.bframes}")
        if self.codec == "vp9" and (self.bframes or self.open_gop):
            raise BadInputError("VP9 has no B-frames or open GOPs")

    @property
    def event_duration(self) -> float:
        """How long each event stays on screen."""
        if self.event_s is not None:
            return self.event_s
        return max(min(4.0, self.duration / 40), 1.25 * cell_span(self.duration, 1, 8))


@dataclass(frozen=True, slots=True)
class Chapter:
    """A chapter: its title and span."""

    index: int
    title: str
    start: float
    end: float
    color: tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Event:
    """Something shown for a few seconds: a needle code, a marker, an anchor, a word."""

    kind: str
    text: str
    start: float
    end: float
    chapter: int


@dataclass(frozen=True, slots=True)
class Scene:
    """A stretch of a chapter with one shape layout."""

    chapter: int
    start: float
    end: float
    layout_seed: int


@dataclass(slots=True)
class Question:
    """A multiple-choice question with its answer and the intervals that prove it."""

    id: str
    kind: str
    question: str
    choices: list[str]
    answer_index: int
    evidence: list[list[float]]

    @property
    def answer(self) -> str:
        """The correct choice's text."""
        return self.choices[self.answer_index]


@dataclass(slots=True)
class Timeline:
    """The full content of a synthetic video, before drawing."""

    spec: SynthSpec
    chapters: list[Chapter] = field(default_factory=list)
    scenes: list[Scene] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def default_fps(duration: float) -> float:
    """5 fps up to 3 hours, 2 fps beyond (a 10-hour video then encodes in about two minutes)."""
    return 5.0 if duration <= 3 * 3600 else 2.0


# -- planning ------------------------------------------------------------------------------------


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


def unique_code(rng: random.Random, used: set[str], sep: str = "-", digits: int = 4) -> str:
    """Two letters (no O or I, which read as digits), ``sep`` and a ``digits``-digit number, not in ``used``."""
    letters = string.ascii_uppercase.replace("O", "").replace("I", "")
    while True:
        code = f"{rng.choice(letters)}{rng.choice(letters)}{sep}{rng.randint(10 ** (digits - 1), 10**digits - 1)}"
        if code not in used:
            used.add(code)
            return code


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


def stretches(tl: Timeline) -> Iterator[tuple[float, float, Scene, Event | None]]:
    """Consecutive stretches with one visual state each, covering the whole video."""
    cuts = {0.0, tl.spec.duration}
    for s in tl.scenes:
        cuts.update((s.start, s.end))
    for e in tl.events:
        cuts.update((e.start, e.end))
    points = sorted(c for c in cuts if 0 <= c <= tl.spec.duration)
    si = 0
    for a, b in itertools.pairwise(points):
        if b <= a:
            continue
        mid = (a + b) / 2
        while tl.scenes[si].end <= mid:
            si += 1
        event = next((e for e in tl.events if e.start <= mid < e.end), None)
        yield a, b, tl.scenes[si], event


# -- writing -------------------------------------------------------------------------------------


def encoder_options(spec: SynthSpec, fixed_bframes: bool = False) -> tuple[str, dict[str, str]]:
    """The encoder name and options for ``spec``.

    ``fixed_bframes`` turns adaptive B-frame placement off, so that every run of ``spec.bframes``
    frames between references is B-frames even when the encoder would judge them not worth it (the
    counter video changes too much between frames for adaptive placement to choose any).
    """
    gop = max(1, round(spec.gop_s * spec.fps))
    if spec.codec == "vp9":
        return "libvpx-vp9", {
            "deadline": "realtime",
            "cpu-used": "8",
            "crf": str(spec.crf),
            "b": "0",
            "g": str(gop),
            "keyint_min": str(gop),
        }
    if spec.codec == "hevc":
        params = [f"keyint={gop}", f"min-keyint={gop}", f"bframes={spec.bframes}", "log-level=error"]
        params.append(f"open-gop={int(spec.open_gop)}")
        if fixed_bframes:
            params.append("b-adapt=0")
        if not spec.scenecut:
            params.append("scenecut=0")
        return "libx265", {"preset": "ultrafast", "crf": str(spec.crf), "x265-params": ":".join(params)}
    options = {
        "preset": "veryfast" if spec.bframes else "ultrafast",
        "crf": str(spec.crf),
        "g": str(gop),
        "keyint_min": str(gop),
    }
    if not spec.scenecut:
        options["sc_threshold"] = "0"
    params = [f"bframes={spec.bframes}"] if spec.bframes else []
    if spec.bframes and fixed_bframes:
        params.append("b-adapt=0")
    if spec.open_gop:
        params.append("open-gop=1")
    if params:
        options["x264-params"] = ":".join(params)
    return "libx264", options


def open_encoder(path: Path, spec: SynthSpec, fixed_bframes: bool = False) -> tuple[Any, Any]:
    """An output container at ``path`` (format from its suffix) and a video stream encoding ``spec``."""
    mp4 = path.suffix.lower() in (".mp4", ".mov", ".m4v")
    container = av.open(str(path), mode="w", options={"movflags": "+faststart"} if mp4 else {})
    fps_fraction = _fps_fraction(spec.fps)
    codec, options = encoder_options(spec, fixed_bframes)
    stream = container.add_stream(codec, rate=fps_fraction)
    if not isinstance(stream, av.VideoStream):
        raise TypeError(f"{codec} is not a video encoder")
    stream.width, stream.height, stream.pix_fmt = spec.width, spec.height, "yuv420p"
    stream.options = dict[str, object](options)
    stream.codec_context.time_base = 1 / fps_fraction
    return container, stream


def _fps_fraction(fps: float) -> Any:
    from fractions import Fraction

    return Fraction(fps).limit_denominator(1001)


Progress = Callable[[int, int], None]


def write_frames(
    path: Path,
    spec: SynthSpec,
    states: Iterator[tuple[float, float, Image.Image]],
    progress: Progress | None = None,
) -> int:
    """Encode piecewise-constant pictures: each ``(start, end, image)`` holds for its frames."""
    total = frame_count(spec)

    def frames() -> Iterator[av.VideoFrame]:
        index = 0
        for start, end, image in states:
            first = math.ceil(start * spec.fps - 1e-9)
            last = min(total, math.ceil(end * spec.fps - 1e-9))
            if last <= max(first, index):
                continue
            frame = av.VideoFrame.from_ndarray(np.asarray(image), format="rgb24").reformat(format="yuv420p")
            for _ in range(max(first, index), last):
                yield frame
            index = last

    return encode_frames(path, spec, frames(), progress)


def frame_count(spec: SynthSpec) -> int:
    """How many frames a video of this spec has (the last one starts before its end)."""
    return math.floor(spec.duration * spec.fps + 1e-9)


def encode_frames(
    path: Path,
    spec: SynthSpec,
    frames: Iterable[av.VideoFrame],
    progress: Progress | None = None,
) -> int:
    """Encode one yuv420p frame per frame index, in order (for videos whose every frame is different)."""
    container, stream = open_encoder(path, spec)
    total = frame_count(spec)
    index = 0
    try:
        for frame in frames:
            frame.pts = index
            for packet in stream.encode(frame):
                container.mux(packet)
            index += 1
            if progress is not None and (index % 500 == 0 or index == total):
                progress(index, total)
        for packet in stream.encode():
            container.mux(packet)
    finally:
        container.close()
    return index


def ground_truth(
    tl: Timeline,
    schema: int,
    video: Path,
    srt: Path | None,
    frames: int,
    event_duration: float,
) -> dict[str, Any]:
    """The ``name.json`` record of a synthetic video (the same keys for every style)."""
    return {
        "schema": schema,
        "style": tl.spec.style,
        "spec": asdict(tl.spec),
        "video": video.name,
        "subtitles": srt.name if srt else None,
        "duration": tl.spec.duration,
        "frames": frames,
        "event_duration": event_duration,
        "chapters": [asdict(c) for c in tl.chapters],
        "events": [asdict(e) for e in tl.events],
        "questions": [{**asdict(q), "answer": q.answer} for q in tl.questions],
    }


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


def synthesize(
    spec: SynthSpec, out_dir: str | Path, name: str = "video", progress: Progress | None = None
) -> dict[str, Any]:
    """Write ``name.mp4``, ``name.json`` (ground truth) and optionally ``name.srt`` into ``out_dir``."""
    if spec.style == "broadcast":
        # Imported here because the broadcast style builds on this module (spec, encoder, records).
        from videoatlas.environment import synth_broadcast

        return synth_broadcast.synthesize(spec, out_dir, name, progress)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tl = plan_timeline(spec)
    video = out / f"{name}.mp4"
    tmp = out / f".{name}.partial.mp4"

    def states() -> Iterator[tuple[float, float, Image.Image]]:
        for a, b, scene, event in stretches(tl):
            yield a, b, draw_state(tl, scene, event)

    frames = write_frames(tmp, spec, states(), progress)
    tmp.replace(video)
    srt = None
    if spec.subtitles:
        srt = out / f"{name}.srt"
        write_srt(srt, narration(tl))
    truth = ground_truth(tl, SCHEMA_VERSION, video, srt, frames, spec.event_duration)
    (out / f"{name}.json").write_text(json.dumps(truth, indent=1), encoding="utf-8")
    log.info("synthesized", video=str(video), duration=format_ts(spec.duration, 0), frames=frames)
    return truth


def schema_version(style: Style) -> int:
    """The current drawing version of ``style`` (a video of an older one is made again)."""
    if style == "broadcast":
        from videoatlas.environment import synth_broadcast  # see synthesize()

        return synth_broadcast.SCHEMA_VERSION
    return SCHEMA_VERSION


def load_current(out_dir: str | Path, name: str = "video", style: Style = "chapters") -> dict[str, Any] | None:
    """The ground truth of a ``style`` video already in ``out_dir``, or None to make it (again).

    None when the files are missing, are of another style, or were drawn by an older version.
    """
    out = Path(out_dir)
    truth_path = out / f"{name}.json"
    if not (truth_path.is_file() and (out / f"{name}.mp4").is_file()):
        return None
    truth: dict[str, Any] = json.loads(truth_path.read_text(encoding="utf-8"))
    # Records written before styles existed carry no "style": they are all chapters videos.
    current = truth.get("style", "chapters") == style and truth.get("schema") == schema_version(style)
    return truth if current else None
