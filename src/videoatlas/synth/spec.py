"""What determines a synthetic video: its spec, and the timeline of chapters, scenes, events and questions.

Shared by every style (:mod:`videoatlas.synth.chapters`, :mod:`videoatlas.synth.broadcast`) and the
counter video; the same spec always gives the same file.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field
from typing import Literal, get_args

from videoatlas import limits
from videoatlas.environment.geometry import cell_span
from videoatlas.errors import BadInputError

Style = Literal["chapters", "broadcast", "signage"]
"""Which generator draws the video: ``chapters`` (this module), ``broadcast`` or ``signage``."""
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
    """A question with its answer and the intervals that prove it: multiple choice, or open (no choices)."""

    id: str
    kind: str
    question: str
    choices: list[str]
    answer_index: int | None
    """The correct choice; None for an open question."""
    evidence: list[list[float]]
    answer_text: str | None = None
    """An open question's value (accepted forms separated by ``|``); None for a multiple-choice one."""

    @property
    def answer(self) -> str:
        """The correct choice's text, or an open question's value."""
        if self.answer_index is None:
            return self.answer_text or ""
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


def shuffled_choices(rng: random.Random, correct: str, others: list[str], n: int) -> tuple[list[str], int]:
    """``correct`` and ``n - 1`` of ``others`` (as many as there are), shuffled; and where ``correct`` landed."""
    choices = [correct, *rng.sample(others, min(n - 1, len(others)))]
    rng.shuffle(choices)
    return choices, choices.index(correct)


def unique_code(rng: random.Random, used: set[str], sep: str = "-", digits: int = 4) -> str:
    """Two letters (no O or I, which read as digits), ``sep`` and a ``digits``-digit number, not in ``used``."""
    letters = string.ascii_uppercase.replace("O", "").replace("I", "")
    while True:
        code = f"{rng.choice(letters)}{rng.choice(letters)}{sep}{rng.randint(10 ** (digits - 1), 10**digits - 1)}"
        if code not in used:
            used.add(code)
            return code
