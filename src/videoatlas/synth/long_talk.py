"""A long spoken video: facts said once somewhere in minutes or hours of routine announcements.

The 24 s video of :mod:`.speech` asks whether an agent listens at all; this one asks whether it
hears a sentence said once in a long track it cannot afford to hear whole at every look. The
pictures are hall boards that change every minute and never bear on a question; the sound is a
routine announcement every one and a half to two minutes (or as often as asked: a track that
is never silent long), and the three facts of
:data:`.speech.LINES` (a city, a name, a room number), each said once, at seeded places spread
over the video. Each fact starts at least 3 s into a 30 s stretch of the track and ends inside it,
so the measure is of where an agent listens, not of a sentence cut in two. The same duration and
seed always give the same video.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from videoatlas.synth.speech import LINES, QUESTIONS, Card, Line, Question

HALLS = ("CONCOURSE", "PLATFORMS", "TICKET HALL", "WAITING ROOM", "LOWER LEVEL", "NORTH EXIT")
BOARDS = ("INFORMATION", "WELCOME", "TIMETABLE", "NOTICES", "SERVICES")
ROUTINE = (
    "Please keep your belongings with you at all times.",
    "Information screens are updated throughout the day.",
    "Smoking is not allowed anywhere in the station.",
    "Please mind the gap between the train and the platform.",
    "Lifts are available at both ends of the hall.",
    "Please take all your luggage when you leave the train.",
)
CARD_S = 60.0
"""How long each hall board stays on screen."""
STRETCH_S = 30.0
"""The length of the stretches a fact is kept inside (the speech track's chunk)."""
FACT_S = 8.0
"""Room left for one spoken fact (each of :data:`.speech.LINES` takes under 6 s at the voice's speed)."""
ROUTINE_GAP_S = (90.0, 120.0)
"""The least and most seconds between two routine announcements, by default."""


@dataclass(frozen=True, slots=True)
class Talk:
    """A long spoken video's boards, spoken lines and questions (each answered only by what is said)."""

    duration: float
    cards: tuple[Card, ...]
    lines: tuple[Line, ...]
    questions: tuple[Question, ...]
    said_at: tuple[float, ...]
    """When each question's fact is said, in the order of ``questions``."""


def long_talk(duration: float, seed: int = 1, routine_gap: tuple[float, float] = ROUTINE_GAP_S) -> Talk:
    """Lay out a spoken video of ``duration`` seconds (at least five minutes).

    ``routine_gap``: the least and most seconds from one routine announcement to the next; the
    default leaves the track mostly silent, ``(8, 12)`` fills it (each announcement takes about 4 s),
    as a talk or a lecture does. A routine announcement keeps clear of a fact by 20 s, or by the
    least gap when that is shorter.
    """
    if duration < 300:
        raise ValueError(f"a long talk lasts at least 300 s, got {duration:g}")
    low, high = routine_gap
    if not FACT_S <= low <= high:
        raise ValueError(f"routine_gap must be two numbers, {FACT_S:g} <= least <= most, got {routine_gap}")
    clear = min(20.0, low)
    key = f"long-talk:{duration:g}:{seed}" + ("" if routine_gap == ROUTINE_GAP_S else f":{low:g}-{high:g}")
    rng = random.Random(key)
    cards = tuple(
        Card(start, min(duration, start + CARD_S), rng.choice(HALLS), rng.choice(BOARDS))
        for start in _steps(0.0, duration, CARD_S)
    )
    stretches = int(duration // STRETCH_S)
    thirds = [range(stretches * i // 3, stretches * (i + 1) // 3) for i in range(3)]
    facts = []
    for fact, places in zip(LINES, thirds, strict=True):
        inside = rng.uniform(3.0, STRETCH_S - FACT_S)
        facts.append(Line(round(rng.choice(places[1:-1]) * STRETCH_S + inside, 1), fact.text))
    routine = []
    t = rng.uniform(20.0, 60.0)
    while t < duration - 10.0:
        if all(abs(t - f.start) > clear for f in facts):
            routine.append(Line(round(t, 1), rng.choice(ROUTINE)))
        t += rng.uniform(low, high)
    spoken = [q for q in QUESTIONS if q.sense == "speech"]
    return Talk(
        duration,
        cards,
        tuple(sorted(facts + routine, key=lambda line: line.start)),
        tuple(spoken),
        tuple(f.start for f in facts),
    )


def _steps(start: float, end: float, step: float) -> list[float]:
    out = []
    while start < end:
        out.append(start)
        start += step
    return out
