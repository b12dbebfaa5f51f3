"""The ``signage`` style of synthetic long video: a transit hall's information screens, with a suite of question kinds.

Neither the stand-in nor any agent was built on this style. It looks like neither other style: a
station's screens in serif and monospaced faces on deep two-tone gradients crossed by a slowly
sliding light band, a status strip at the top naming the hall, and cards that slide in from the
side and then rest in one of three bays. Its questions cover the kinds long-video benchmarks are
made of, each with ground truth and the ranges that prove it:

* ``needle``: a locker code on a yellow tag, shown once (the control);
* ``count`` and ``count_open``: a cyan badge reading ``DIAMOND`` shown 1 to 5 times at separate
  moments, with same-looking badges reading other shape names as decoys; asked with choices and as
  an open question whose answer is the number;
* ``order``: three departure cards, each once: which comes first;
* ``right_after``: a red ``DELAYED`` sign, then 2-6 s after it a platform card; platform cards with
  other names elsewhere are decoys;
* ``first_last``: three route pills: which is shown first (or last);
* ``open_value``: an orange gate sign whose number is asked for, as an open question.

Events last 1 to 1.3 times ``min(20 s, duration / 60)`` (at least 4 s), so on an hour-long video
they are shorter than a root cell: a count must look finer than the root grid. Two appearances of
the counted badge are at least twice that length apart. Frames are a panned
gradient plus pre-rendered cards (:mod:`.signage_draw`), so a 3-hour video is quick to make.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

import av
import structlog

from videoatlas.environment.subtitles import SubtitleLine
from videoatlas.errors import BadInputError
from videoatlas.synth.broadcast_draw import Sprite, Texture, frame_planes
from videoatlas.synth.encode import drawn_style, frame_runs
from videoatlas.synth.signage_draw import BAYS, card_sprites, hall_texture, status_sprite
from videoatlas.synth.spec import (
    Chapter,
    Event,
    Question,
    Scene,
    SynthSpec,
    Timeline,
    shuffled_choices,
    unique_code,
)

log = structlog.get_logger(__name__)

SCHEMA_VERSION = 1
"""Bumped whenever the same spec would draw different pixels or ask different questions."""
MIN_DURATION = 300.0

HALLS = (
    "NORTH CONCOURSE",
    "RIVER HALL",
    "EAST ARCADE",
    "GRAND FOYER",
    "WEST GALLERY",
    "CLOCK COURT",
    "HARBOUR WING",
    "MARKET LEVEL",
    "GARDEN ATRIUM",
    "SUMMIT DECK",
    "LOWER VAULT",
    "BRIDGE HALL",
)
STATIONS = ("ALDER PARK", "BIRCHWOOD", "CEDAR HILL", "DUNMORE", "ELMSTEAD", "FERNDALE", "GLENROCK", "HOLLYBANK")
COUNTED = "DIAMOND"
DECOY_SHAPES = ("OCTAGON", "TRIANGLE", "CRESCENT")
ANCHOR = "DELAYED"
GAP = "gap"
"""A block part that shows nothing: it only keeps the next block away."""

NEEDLE_WORDINGS = (
    "Which locker code is printed on the yellow tag?",
    "What code does the yellow locker tag show?",
)
COUNT_WORDINGS = (
    "How many times does the DIAMOND badge appear in the video?",
    "Count the separate appearances of the DIAMOND badge. How many are there?",
)
COUNT_OPEN_WORDINGS = (
    "How many separate times is the DIAMOND badge shown? Answer with a number.",
    "In total, how often does the DIAMOND badge come up on screen? Give the number.",
)
ORDER_WORDINGS = (
    "Which of these departures is announced first: {options}?",
    "Of {options}, which departure card appears earliest?",
)
AFTER_WORDINGS = (
    "Which platform card is shown right after the DELAYED sign?",
    "Straight after the DELAYED sign, which station is on the platform card?",
)
FIRST_LAST_WORDINGS = {
    "first": ("Which route pill is shown first in the video?", "Of the route pills, which appears earliest?"),
    "last": ("Which route pill is shown last in the video?", "Of the route pills, which appears latest?"),
}
GATE_WORDINGS = (
    "What gate number is shown on the orange gate sign? Give the number only.",
    "Which gate number does the orange sign announce?",
)
ANNOUNCEMENTS = (
    "Welcome to the {hall}.",
    "Please keep your belongings with you in the {hall}.",
    "Information screens in the {hall} are updated continuously.",
)


@dataclass(slots=True)
class SignagePlan:
    """Everything a signage-style video shows, before drawing: the timeline and where each card rests."""

    timeline: Timeline
    bays: dict[Event, int] = field(default_factory=dict)
    """Each event's bay (index into :data:`~.signage_draw.BAYS`)."""


def event_length(spec: SynthSpec) -> float:
    """The shortest an event lasts (``event_s`` when given)."""
    if spec.event_s is not None:
        return spec.event_s
    return max(4.0, min(20.0, spec.duration / 60))


def _halls(tl: Timeline, rng: random.Random) -> None:
    """Halls (the chapters) and shots (the scenes: each its own gradient), covering the whole video."""
    dur = tl.spec.duration
    n = max(2, min(len(HALLS), round(dur / 900)))
    names = rng.sample(HALLS, n)
    bounds = [0.0, *sorted(round(rng.uniform(0.1, 0.9) * dur, 2) for _ in range(n - 1)), dur]
    for i in range(n):
        hue = rng.random()
        colour = (int(40 + 150 * hue), 90, int(200 - 120 * hue))
        tl.chapters.append(Chapter(i, names[i], bounds[i], bounds[i + 1], colour))
        t = bounds[i]
        while t < bounds[i + 1]:
            end = min(bounds[i + 1], round(t + rng.uniform(40, 240), 2))
            if bounds[i + 1] - end < 20:
                end = bounds[i + 1]
            tl.scenes.append(Scene(i, t, end, rng.randrange(1 << 30)))
            t = end


def _place(tl: Timeline, blocks: list[list[tuple[str, str, float, float]]], pad: float, rng: random.Random) -> None:
    """Spread the blocks (events kept together) over the whole video in random order, at least ``pad`` apart."""
    dur = tl.spec.duration
    rng.shuffle(blocks)
    lengths = [max(o + ln for _, _, o, ln in b) for b in blocks]
    spare = dur - sum(lengths) - pad * (len(blocks) + 1)
    if spare < 0:
        raise BadInputError("the video is too short for its events; use a longer video or shorter events")
    weights = [rng.random() + 0.05 for _ in range(len(blocks) + 1)]
    t = 0.0
    events = []
    for block, length, weight in zip(blocks, lengths, weights, strict=False):
        t += pad + spare * weight / sum(weights)
        start = round(t, 2)
        for kind, text, offset, ln in block:
            if kind == GAP:
                continue
            s = round(start + offset, 2)
            e = round(s + ln, 2)
            chapter = next(c.index for c in tl.chapters if c.start <= s < c.end)
            events.append(Event(kind, text, s, e, chapter))
        t = start + length
    tl.events = sorted(events, key=lambda e: e.start)


def plan_signage(spec: SynthSpec) -> SignagePlan:
    """Lay out halls, shots, events, their bays and the questions (no pixels yet)."""
    if spec.duration < MIN_DURATION:
        raise BadInputError(f"signage-style videos must last at least {MIN_DURATION:g} s, got {spec.duration:g}")
    rng = random.Random(f"signage:{spec.seed}")
    tl = Timeline(spec)
    _halls(tl, rng)
    base = event_length(spec)

    def length() -> float:
        return math.ceil(base * rng.uniform(1.0, 1.3) * 100) / 100

    used: set[str] = set()
    locker = unique_code(rng, used)
    n_count = rng.randint(1, 5)
    decoys = [rng.choice(DECOY_SHAPES) for _ in range(rng.randint(1, 3))]
    stations = rng.sample(STATIONS, 6)
    departures, platform, platform_decoys = stations[:3], stations[3], stations[4:]
    routes = [f"ROUTE {n}" for n in rng.sample(range(10, 99), 3)]
    gate = str(rng.randint(11, 68))
    gap = round(rng.uniform(2.0, 6.0), 2)
    anchor_len, target_len = length(), length()
    blocks: list[list[tuple[str, str, float, float]]] = [
        [("needle", locker, 0.0, length())],
        # Each counted badge keeps an empty stretch of two event lengths after it: appearances stay separate.
        *[[("count", COUNTED, 0.0, length()), (GAP, "", 0.0, 3 * base)] for _ in range(n_count)],
        *[[("count_decoy", shape, 0.0, length())] for shape in decoys],
        *[[("order", name, 0.0, length())] for name in departures],
        [("anchor", ANCHOR, 0.0, anchor_len), ("after", platform, anchor_len + gap, target_len)],
        *[[("platform_decoy", name, 0.0, length())] for name in platform_decoys],
        *[[("route", route, 0.0, length())] for route in routes],
        [("gate", f"GATE {gate}", 0.0, length())],
    ]
    _place(tl, blocks, max(3.0, base / 2), rng)
    plan = SignagePlan(tl)
    for event in tl.events:
        plan.bays[event] = rng.randrange(len(BAYS))
    tl.questions = _questions(tl, rng, locker, gate)
    return plan


def _span(e: Event) -> list[float]:
    return [e.start, e.end]


def _questions(tl: Timeline, rng: random.Random, locker: str, gate: str) -> list[Question]:
    by_kind: dict[str, list[Event]] = {}
    for e in tl.events:
        by_kind.setdefault(e.kind, []).append(e)
    qs: list[Question] = []
    taken = {locker}
    others = [unique_code(rng, taken) for _ in range(3)]
    choices, idx = shuffled_choices(rng, locker, others, 4)
    needle = by_kind["needle"][0]
    qs.append(Question("needle-locker", "needle", rng.choice(NEEDLE_WORDINGS), choices, idx, [_span(needle)]))

    counted = by_kind["count"]
    k = len(counted)
    near = [str(v) for v in range(max(0, k - 3), k + 4) if v != k]
    choices, idx = shuffled_choices(rng, str(k), near, 5)
    proof = [_span(e) for e in counted]
    qs.append(Question("count-diamond", "count", rng.choice(COUNT_WORDINGS), choices, idx, proof))
    qs.append(Question("count-diamond-open", "count_open", rng.choice(COUNT_OPEN_WORDINGS), [], None, proof, str(k)))

    order = by_kind["order"]
    names = [e.text for e in order]
    shuffled = rng.sample(names, len(names))
    options = ", ".join(shuffled[:-1]) + " or " + shuffled[-1]
    wording = rng.choice(ORDER_WORDINGS).format(options=options)
    qs.append(
        Question("order-departures", "order", wording, shuffled, shuffled.index(names[0]), [_span(e) for e in order])
    )

    anchor, after = by_kind["anchor"][0], by_kind["after"][0]
    decoys = [e.text for e in by_kind["platform_decoy"]]
    choices, idx = shuffled_choices(rng, after.text, decoys, 3)
    proof = [_span(anchor), _span(after)]
    qs.append(Question("after-delayed", "right_after", rng.choice(AFTER_WORDINGS), choices, idx, proof))

    routes = by_kind["route"]
    which = rng.choice(("first", "last"))
    target = routes[0] if which == "first" else routes[-1]
    choices = rng.sample([e.text for e in routes], len(routes))
    wording = rng.choice(FIRST_LAST_WORDINGS[which])
    qs.append(
        Question(
            f"{which}-route", "first_last", wording, choices, choices.index(target.text), [_span(e) for e in routes]
        )
    )

    sign = by_kind["gate"][0]
    qs.append(Question("gate-open", "open_value", rng.choice(GATE_WORDINGS), [], None, [_span(sign)], gate))
    return qs


# -- drawing and writing -------------------------------------------------------------------------


def render_frames(plan: SignagePlan) -> Iterator[av.VideoFrame]:
    """Every frame: the shot's panned gradient, the hall's status strip, the current card (sliding in, then resting)."""
    tl = plan.timeline
    spec = tl.spec
    w, h, fps = spec.width, spec.height, spec.fps
    strips = [status_sprite(ch.title, ch.color, w, h) for ch in tl.chapters]
    cards: dict[Event, list[Sprite]] = {}

    def texture_of(scene: Scene) -> Texture:
        return hall_texture(scene.layout_seed, tl.chapters[scene.chapter].color, w, h)

    for frames, scene, event, texture in frame_runs(tl, texture_of):
        slides: list[Sprite] = []
        if event is not None:
            if event not in cards:
                cards = {event: card_sprites(event, plan.bays[event], w, h)}  # one card on screen at a time
            slides = cards[event]
        for i in frames:
            frame = av.VideoFrame(w, h, "yuv420p")
            planes = frame_planes(frame)
            texture.paint(i / fps, planes)
            strip = strips[scene.chapter]
            if strip is not None:
                strip.paint(planes)
            if slides and event is not None:
                # The card slides in over its first frames, then rests in its bay.
                shown = slides[min(len(slides) - 1, max(0, i - math.ceil(event.start * fps - 1e-9)))]
                shown.paint(planes)
            yield frame


def announcements(plan: SignagePlan) -> list[SubtitleLine]:
    """A public-address line at the start of every shot, naming the hall."""
    rng = random.Random(f"signage-pa:{plan.timeline.spec.seed}")
    lines = []
    for scene in plan.timeline.scenes:
        hall = plan.timeline.chapters[scene.chapter].title.title()
        lines.append(
            SubtitleLine(scene.start, min(scene.end, scene.start + 3.0), rng.choice(ANNOUNCEMENTS).format(hall=hall))
        )
    return lines


STYLE = drawn_style("signage", SCHEMA_VERSION, plan_signage, render_frames, announcements, event_length)
"""How :func:`videoatlas.synth.synthesize` makes a signage-style video."""
