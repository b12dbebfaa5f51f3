"""The ``broadcast`` style of synthetic long video: a TV channel's day, with its own look and questions.

The stand-in VLM and the agent were developed against the ``chapters`` style
(:mod:`videoatlas.synth`); this style measures them on video they were not built for.
Everything differs except the four question kinds, kept so accuracy per kind compares across styles:

* the video is a run of programme *segments* ("WEATHER DESK", "ROWING FINAL"...) cut into shots;
  every frame shows a moving, textured background (stripes, checks, clouds, dots, waves panning
  8-40 px/s), and each segment places its title its own way (lower-third strap, corner tag, side
  panel, headline bar) in its own font;
* events appear at one of several places of their segment's layout, for a random time of 1 to 1.8
  times ``max(3 s, 1.25 x a depth-1 cell)`` (an explicit ``event_s`` sets that minimum instead):
  a flight number on an amber departures board in every segment (``needle``), a lime ``GOAL``
  badge a known number of times (``marker``), outlined ``FORECAST`` city names straight on the
  background (``order``), a slanted magenta ``REPLAY`` strap (``anchor``) with a teal ``PLAYER``
  panel 1-5 s after or before it (``after`` / ``before``), and the same panel with other names
  elsewhere (``decoy``);
* questions come in several wordings, with 2 to 5 choices each.

The ground truth has the keys of the chapters style (segments are its ``chapters``, with their
accent colour; ``event_duration`` is the shortest an event may last), plus ``"style": "broadcast"``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field

import av
import structlog

from videoatlas.environment.geometry import cell_span
from videoatlas.environment.subtitles import SubtitleLine
from videoatlas.errors import BadInputError
from videoatlas.synth.broadcast_draw import (
    LAYOUTS,
    SLOTS,
    TITLE_FONTS,
    Look,
    Sprite,
    Texture,
    event_sprite,
    frame_planes,
    make_texture,
    palette,
    title_sprite,
)
from videoatlas.synth.encode import drawn_style, frame_runs
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
MIN_DURATION = 60.0

SEGMENTS = (
    "MATCHDAY LIVE",
    "HARBOUR NEWS",
    "TRANSIT WATCH",
    "WEATHER DESK",
    "MARKET CLOSE",
    "CITY HALL",
    "NIGHT FERRY",
    "ROWING FINAL",
    "CYCLE STAGE",
    "ALPINE RELAY",
    "COAST GUARD",
    "AIRPORT DESK",
    "FARM REPORT",
    "SCIENCE HOUR",
    "LATE SPORTS",
    "ROAD REPORT",
    "RAIL UPDATE",
    "HARVEST FAIR",
    "CHESS ROUND",
    "SAILING CUP",
    "SKI JUMPING",
    "JAZZ SESSION",
    "BOOK REVIEW",
    "GARDEN SHOW",
    "DERBY DAY",
    "SURF CHECK",
    "POLAR WATCH",
    "TECH BRIEF",
)
CITIES = ("LISBON", "NAIROBI", "OSAKA", "QUEBEC", "HOBART", "TBILISI", "MEDELLIN", "TROMSO", "BERGEN", "ZAGREB")
PLAYERS = ("ADEYEMI", "BRANDT", "CASTILLO", "DUBOIS", "FISCHER", "HOLLOWAY", "JANSSEN", "LAURENT", "NAKAMURA", "TANAKA")
MARKER = "GOAL"
ANCHOR = "REPLAY"

# Several wordings per kind, so no figure depends on one sentence.
NEEDLE_WORDINGS = (
    "During the {segment} segment, which flight number is posted on the departures board?",
    "Which flight number appears on the board while {segment} is on air?",
    "In the {segment} part of the broadcast, what flight number is displayed?",
)
COUNT_WORDINGS = (
    "How many times does the GOAL badge appear in the broadcast?",
    "Count the GOAL flashes over the whole video. How many are there?",
    "In total, how often is a GOAL badge shown on screen?",
)
ORDER_WORDINGS = (
    "Which city's forecast is shown first: {options}?",
    "Of these forecast cities, which one appears earliest in the video: {options}?",
    "The weather forecasts name several cities. Which of {options} comes first?",
)
ANCHOR_WORDINGS = {
    "after": (
        "Which player's name is shown right after the REPLAY banner?",
        "Straight after the REPLAY banner, whose name comes up on the player panel?",
    ),
    "before": (
        "Which player's name is shown just before the REPLAY banner?",
        "Right before the REPLAY banner appears, whose name is on the player panel?",
    ),
}
NARRATION = (
    "Coverage continues with {title}.",
    "Back to {title} now.",
    "You are watching {title}.",
    "Stay with us for {title}.",
    "More from {title} in a moment.",
)


@dataclass(slots=True)
class BroadcastPlan:
    """Everything a broadcast-style video shows, before drawing."""

    timeline: Timeline
    looks: list[Look] = field(default_factory=list)
    """One per segment (``timeline.chapters``)."""
    slots: dict[Event, int] = field(default_factory=dict)
    """Where each event sits: an index into its segment layout's slots."""


@dataclass(slots=True)
class _Block:
    """Events that must stay together in time (offsets from the block's start), placed as one."""

    parts: list[tuple[str, str, float, float]]
    """``(kind, text, offset, length)``."""
    segment: int | None = None

    @property
    def length(self) -> float:
        return max(offset + length for _, _, offset, length in self.parts)


def min_event_s(spec: SynthSpec) -> float:
    """The shortest an event lasts: long enough to be caught by a depth-1 cell of its video."""
    if spec.event_s is not None:
        return spec.event_s
    return max(3.0, 1.25 * cell_span(spec.duration, 1, 8))


# -- planning ------------------------------------------------------------------------------------


def _lay_segments(tl: Timeline, rng: random.Random) -> list[Look]:
    """Segments with titles, looks and shots, covering the whole video."""
    dur = tl.spec.duration
    n = max(3, min(len(SEGMENTS), round(dur / 400)))
    titles = rng.sample(SEGMENTS, n)
    colours = palette(n, rng.random())
    weights = [rng.uniform(0.6, 1.4) for _ in range(n)]
    bounds = [0.0]
    for w in weights[:-1]:
        bounds.append(round(bounds[-1] + dur * w / sum(weights), 2))
    bounds.append(dur)
    looks: list[Look] = []
    for i in range(n):
        layout = rng.choice([x for x in LAYOUTS if not looks or x != looks[-1].layout])
        accent, hue = colours[i]
        looks.append(Look(layout, rng.choice(TITLE_FONTS), accent, hue))
        tl.chapters.append(Chapter(i, titles[i], bounds[i], bounds[i + 1], accent))
        t = bounds[i]
        while t < bounds[i + 1]:  # shots: the timeline's scenes, each seeding its own background texture
            end = min(bounds[i + 1], round(t + rng.uniform(25, 150), 2))
            if bounds[i + 1] - end < 15:
                end = bounds[i + 1]
            tl.scenes.append(Scene(i, t, end, rng.randrange(1 << 30)))
            t = end
    return looks


def _lengths(rng: random.Random, count: int, shortest: float, room: float) -> list[float]:
    """``count`` event lengths from ``shortest`` to 1.8x it, shrunk towards ``shortest`` to fit ``room``."""
    draws = [rng.random() for _ in range(count)]
    spread = min(0.8, max(0.0, (room - count * shortest) / (shortest * max(sum(draws), 1e-9))))
    # Rounded up so that no event is shorter than the minimum after rounding.
    return [math.ceil(shortest * (1 + spread * u) * 100) / 100 for u in draws]


def _assign(
    blocks: list[_Block], free: list[float], pad: float, rng: random.Random, avoid: set[int] | None = None
) -> None:
    """Give each block a segment with room for it, preferring segments not in ``avoid`` (updated)."""
    for block in blocks:
        cost = block.length + pad
        if block.segment is None:
            fits = [s for s in range(len(free)) if free[s] >= cost]
            fresh = [s for s in fits if avoid is None or s not in avoid]
            if not fits:
                raise BadInputError("the video is too short for its events; use a longer video or shorter events")
            block.segment = rng.choice(fresh or fits)
        if free[block.segment] < cost:
            raise BadInputError("the video is too short for its events; use a longer video or shorter events")
        free[block.segment] -= cost
        if avoid is not None:
            avoid.add(block.segment)


def _place(tl: Timeline, blocks: list[_Block], pad: float, rng: random.Random) -> list[Event]:
    """Spread each segment's blocks over it in random order, with random gaps of at least ``pad``."""
    events: list[Event] = []
    for ch in tl.chapters:
        mine = [b for b in blocks if b.segment == ch.index]
        rng.shuffle(mine)
        spare = (ch.end - ch.start) - sum(b.length for b in mine) - pad * (len(mine) + 1)
        weights = [rng.random() + 0.05 for _ in range(len(mine) + 1)]
        t = ch.start
        for block, weight in zip(mine, weights, strict=False):
            t += pad + spare * weight / sum(weights)
            start = round(t, 2)
            for kind, text, offset, length in block.parts:
                s = round(start + offset, 2)
                events.append(Event(kind, text, s, round(s + length, 2), ch.index))
            t = start + block.length
    return sorted(events, key=lambda e: e.start)


def plan_broadcast(spec: SynthSpec) -> BroadcastPlan:
    """Lay out segments, shots, events, their places on screen and the questions (no pixels yet)."""
    if spec.duration < MIN_DURATION:
        raise BadInputError(f"broadcast-style videos must last at least {MIN_DURATION:g} s, got {spec.duration:g}")
    rng = random.Random(spec.seed)
    tl = Timeline(spec)
    plan = BroadcastPlan(tl, _lay_segments(tl, rng))
    dur, n_seg = spec.duration, len(tl.chapters)
    shortest = min_event_s(spec)
    pad = max(1.0, shortest / 3)
    n_markers = rng.randint(2, min(6, 2 + int(dur // 300)))
    cities = rng.sample(CITIES, rng.randint(2, min(5, 2 + int(dur // 200))))
    players = rng.sample(PLAYERS, rng.randint(2, min(5, 2 + int(dur // 200))))
    direction = rng.choice(("after", "before"))
    gap = round(rng.uniform(1.0, 5.0), 2)
    n_events = n_seg + n_markers + len(cities) + 1 + len(players)
    room = 0.85 * dur - pad * (n_events + n_seg) - gap
    lengths = iter(_lengths(rng, n_events, shortest, room))

    used: set[str] = set()
    flights = [unique_code(rng, used, sep=" ", digits=3) for _ in range(n_seg)]
    needles = [_Block([("needle", flight, 0.0, next(lengths))], s) for s, flight in enumerate(flights)]
    anchor_len, target_len = next(lengths), next(lengths)
    if direction == "after":
        pair = [("anchor", ANCHOR, 0.0, anchor_len), ("after", players[0], anchor_len + gap, target_len)]
    else:
        pair = [("before", players[0], 0.0, target_len), ("anchor", ANCHOR, target_len + gap, anchor_len)]
    anchor = _Block(pair)
    orders = [_Block([("order", city, 0.0, next(lengths))]) for city in cities]
    markers = [_Block([("marker", MARKER, 0.0, next(lengths))]) for _ in range(n_markers)]
    decoys = [_Block([("decoy", name, 0.0, next(lengths))]) for name in players[1:]]

    free = [ch.end - ch.start - pad for ch in tl.chapters]
    _assign(needles, free, pad, rng)
    _assign([anchor], free, pad, rng)
    _assign(orders, free, pad, rng, set())
    _assign(markers, free, pad, rng, set())
    assert anchor.segment is not None
    _assign(decoys, free, pad, rng, {anchor.segment})  # same-looking panels, away from the anchor
    tl.events = _place(tl, [*needles, anchor, *orders, *markers, *decoys], pad, rng)
    for event in tl.events:
        plan.slots[event] = rng.randrange(len(SLOTS[plan.looks[event.chapter].layout]))
    tl.questions = _questions(tl, rng, cities, players, direction)
    return plan


# -- questions -----------------------------------------------------------------------------------


def _options(words: list[str]) -> str:
    return ", ".join(words[:-1]) + " or " + words[-1]


def _questions(
    tl: Timeline, rng: random.Random, cities: list[str], players: list[str], direction: str
) -> list[Question]:
    questions: list[Question] = []
    needles = [e for e in tl.events if e.kind == "needle"]
    for e in sorted(needles, key=lambda e: e.chapter):
        others = [n.text for n in needles if n is not e]
        choices, idx = shuffled_choices(rng, e.text, others, rng.randint(2, 5))
        wording = rng.choice(NEEDLE_WORDINGS).format(segment=tl.chapters[e.chapter].title)
        questions.append(
            Question(f"needle-{e.chapter}", "needle_in_chapter", wording, choices, idx, [[e.start, e.end]])
        )

    markers = [e for e in tl.events if e.kind == "marker"]
    n = len(markers)
    near = [str(v) for v in range(max(1, n - 4), n + 5) if v != n]
    choices, idx = shuffled_choices(rng, str(n), near, rng.randint(2, 5))
    evidence = [[m.start, m.end] for m in markers]
    questions.append(Question("count-goal", "counting", rng.choice(COUNT_WORDINGS), choices, idx, evidence))

    ordered = [e for e in tl.events if e.kind == "order"]
    choices = list(cities)
    rng.shuffle(choices)
    wording = rng.choice(ORDER_WORDINGS).format(options=_options(choices))
    evidence = [[e.start, e.end] for e in ordered]
    questions.append(Question("order-forecast", "order", wording, choices, choices.index(ordered[0].text), evidence))

    anchor = next(e for e in tl.events if e.kind == "anchor")
    target = next(e for e in tl.events if e.kind == direction)
    choices, idx = shuffled_choices(rng, target.text, players[1:], len(players))
    evidence = sorted([[anchor.start, anchor.end], [target.start, target.end]])
    wording = rng.choice(ANCHOR_WORDINGS[direction])
    questions.append(Question(f"replay-{direction}", "after_anchor", wording, choices, idx, evidence))
    return questions


# -- drawing and writing -------------------------------------------------------------------------


def render_frames(plan: BroadcastPlan) -> Iterator[av.VideoFrame]:
    """Every frame of the video, in order: the shot's moving texture, the title, the current event."""
    tl = plan.timeline
    spec = tl.spec
    w, h, fps = spec.width, spec.height, spec.fps
    titles = [title_sprite(look, ch.title, w, h) for ch, look in zip(tl.chapters, plan.looks, strict=True)]

    def texture_of(scene: Scene) -> Texture:
        return make_texture(scene.layout_seed, plan.looks[scene.chapter].hue, w, h)

    for frames, scene, event, texture in frame_runs(tl, texture_of):
        look = plan.looks[scene.chapter]
        sprites: list[Sprite | None] = [titles[scene.chapter]]
        if event is not None:
            sprites.append(event_sprite(event, look, plan.slots[event], w, h))
        for i in frames:
            # A fresh frame each time: the encoder may still hold the previous one.
            frame = av.VideoFrame(w, h, "yuv420p")
            planes = frame_planes(frame)
            texture.paint(i / fps, planes)
            for sprite in sprites:
                if sprite is not None:
                    sprite.paint(planes)
            yield frame


def narration(plan: BroadcastPlan) -> list[SubtitleLine]:
    """A presenter's line at the start of every shot, naming its segment."""
    rng = random.Random(plan.timeline.spec.seed)
    lines = []
    for scene in plan.timeline.scenes:
        title = plan.timeline.chapters[scene.chapter].title.title()
        end = min(scene.end, scene.start + 3.5)
        lines.append(SubtitleLine(scene.start, end, rng.choice(NARRATION).format(title=title)))
    return lines


STYLE = drawn_style("broadcast", SCHEMA_VERSION, plan_broadcast, render_frames, narration, min_event_s)
"""How :func:`videoatlas.synth.synthesize` makes a broadcast-style video."""
