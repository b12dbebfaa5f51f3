"""A short video with a spoken track: some facts are said and never shown, others shown and never said.

The pictures are plain cards of large text (what a reader of pixels can answer from); the sound is
sentences spoken by ``espeak-ng`` (a Debian package) at known times, muxed in as AAC with PyAV.
The sentences say numbers as words inside a sentence and use short, common names: a small speech
model (Whisper tiny.en) hears those reliably, where digits read one by one or rare words it does not.
:data:`QUESTIONS` holds the questions with their answers and which sense answers each.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import wave
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from PIL import Image, ImageDraw

from videoatlas.environment.render import load_font
from videoatlas.errors import BadInputError

RATE = 16_000
"""Sample rate of the spoken track."""
DURATION_S = 24.0
FPS = 4
SIZE = (480, 270)
VOICE, WORDS_PER_MINUTE, WORD_GAP = "en", 120, 4
"""espeak-ng's English voice, slowed from its 175 words a minute, with 40 ms between words: on the phrases of
``benchmarks/bench_speech.py`` Whisper tiny.en hears this best of the voices, speeds and gaps tried."""


@dataclass(frozen=True, slots=True)
class Card:
    """Text shown from ``start`` to ``end`` (seconds): a title line over a large line."""

    start: float
    end: float
    title: str
    body: str


@dataclass(frozen=True, slots=True)
class Line:
    """A sentence spoken starting at ``start`` seconds."""

    start: float
    text: str


@dataclass(frozen=True, slots=True)
class Question:
    """A question about the video, its choices, the right one, and the only sense that can answer it."""

    question: str
    choices: tuple[str, ...]
    answer: str
    sense: str
    """``speech`` (said, never shown) or ``pixels`` (shown, never said)."""


CARDS = (
    Card(0.0, 8.0, "CENTRAL STATION", "EVENING"),
    Card(8.0, 16.0, "DEPARTURES", "LISBON"),
    Card(16.0, 24.0, "THANKS", "GOODBYE"),
)
LINES = (
    Line(1.0, "Good evening. The night train tonight goes to Bristol."),
    Line(9.0, "Your driver today is Maria."),
    Line(16.5, "The meeting starts at seven thirty in room four hundred."),
)
QUESTIONS = (
    Question("Which city does the announcer say the night train goes to?", ("Leeds", "Bristol", "York", "Oxford"),
             "Bristol", "speech"),
    Question("Which city is shown on the DEPARTURES board?", ("Madrid", "Porto", "Lisbon", "Seville"),
             "Lisbon", "pixels"),
    Question("Who does the announcer say is the driver today?", ("Maria", "Peter", "Sofia", "James"),
             "Maria", "speech"),
    Question("Which room does the speaker say the meeting is in?", ("140", "400", "410", "440"), "400", "speech"),
)  # fmt: skip


HELD_OUT_CARDS = (
    Card(0.0, 8.0, "HARBOUR", "WELCOME"),
    Card(8.0, 16.0, "TIMETABLE", "PIER TWO"),
    Card(16.0, 24.0, "FAREWELL", "SAFE TRIP"),
)
HELD_OUT_LINES = (
    Line(1.0, "The boat this morning goes to Dublin."),
    Line(9.0, "The crew wish you a calm crossing."),
    Line(16.5, "Tea and coffee are sold on the upper deck."),
)
HELD_OUT = (
    Question("Where does the boat go this morning?", ("Cork", "Dublin", "Galway", "Belfast"), "Dublin", "speech"),
    Question("Which city does the night train go to?", ("Leeds", "Bristol", "York", "Oxford"), "Bristol", "speech"),
    Question("Who is the driver today?", ("Maria", "Peter", "Sofia", "James"), "Maria", "speech"),
    Question("Which room is the meeting in?", ("140", "400", "410", "440"), "400", "speech"),
)
"""Questions answered only by what is said, asked without a verb of saying: the first about a video of
:data:`HELD_OUT_CARDS` (which show nothing that bears on it) and :data:`HELD_OUT_LINES`, the others about
the main video. A searcher has to decide for itself to listen."""


def espeak() -> str:
    """The ``espeak-ng`` executable, or a clear error naming the package to install."""
    found = shutil.which("espeak-ng")
    if found is None:
        raise BadInputError("espeak-ng is not installed (apt-get install espeak-ng; `make setup` does it)")
    return found


def speak(text: str) -> np.ndarray:
    """``text`` spoken by espeak-ng, as 16 kHz mono 16-bit samples."""
    wav = subprocess.run(
        [espeak(), "-v", VOICE, "-s", str(WORDS_PER_MINUTE), "-g", str(WORD_GAP), "--stdout", text],
        check=True,
        capture_output=True,
    ).stdout
    with wave.open(io.BytesIO(wav)) as reader:
        rate, data = reader.getframerate(), reader.readframes(reader.getnframes())
    samples = np.frombuffer(data, "<i2").astype(np.float64)
    if rate != RATE:  # espeak-ng speaks at 22050 Hz: resample linearly
        times = np.arange(0, len(samples) / rate, 1 / RATE)
        samples = np.interp(times, np.arange(len(samples)) / rate, samples)
    return samples.astype(np.int16)


def track(lines: tuple[Line, ...] = LINES, duration: float = DURATION_S) -> np.ndarray:
    """The whole spoken track: silence with each line placed at its start."""
    out = np.zeros(round(duration * RATE), np.int16)
    for line in lines:
        spoken = speak(line.text)
        at = round(line.start * RATE)
        take = spoken[: max(0, len(out) - at)]
        out[at : at + len(take)] = take
    return out


def card_picture(card: Card) -> np.ndarray:
    """A card as RGB pixels: the title small at the top, the body large in the middle."""
    image = Image.new("RGB", SIZE, (20, 40, 70))
    draw = ImageDraw.Draw(image)
    for text, size, y in ((card.title, 30, 40), (card.body, 56, 130)):
        font = load_font(size)
        box = draw.textbbox((0, 0), text, font=font)
        draw.text(((SIZE[0] - (box[2] - box[0])) // 2, y), text, font=font, fill=(250, 250, 250))
    return np.asarray(image)


def write_speech_video(
    path: str | Path,
    with_audio: bool = True,
    cards: tuple[Card, ...] = CARDS,
    lines: tuple[Line, ...] = LINES,
    duration: float = DURATION_S,
) -> Path:
    """Write the video (H.264 pictures, AAC speech) to ``path`` (an .mp4); ``with_audio=False``: pictures only.

    ``cards`` and ``lines`` (the cards covering ``duration`` seconds) make another video of the same
    kind, such as a :func:`long_talk`.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    sound = track(lines, duration) if with_audio else None
    pictures: dict[Card, av.VideoFrame] = {}
    with av.open(str(out), "w") as container:
        video = container.add_stream("libx264", rate=FPS)
        video.width, video.height, video.pix_fmt = SIZE[0], SIZE[1], "yuv420p"
        video.options = {"crf": "20", "g": str(FPS * 2)}
        audio = container.add_stream("aac", rate=RATE, layout="mono") if sound is not None else None
        for i in range(round(duration * FPS)):
            t = i / FPS
            card = next(c for c in cards if c.start <= t < c.end)
            if card not in pictures:
                pictures = {card: av.VideoFrame.from_ndarray(card_picture(card), format="rgb24")}
            frame = pictures[card]
            frame.pts = i
            frame.time_base = Fraction(1, FPS)
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
        if audio is not None and sound is not None:
            step = 1024
            for first in range(0, len(sound), step):
                chunk = sound[first : first + step].reshape(1, -1)
                piece = av.AudioFrame.from_ndarray(chunk, format="s16", layout="mono")
                piece.sample_rate, piece.pts, piece.time_base = RATE, first, Fraction(1, RATE)
                container.mux(audio.encode(piece))
            container.mux(audio.encode(None))
    return out
