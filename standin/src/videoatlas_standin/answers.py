"""What the evidence in a request says: which tiles answer, how often the thing appeared, the best-supported choice.

The judgement every filled field draws on (:class:`Answers`): the tiles that hold the answer, the
sightings that bear on the question (seen or written down in the request), separate appearances
and their count, the best-supported choice and whether what was seen settles the question, the
labels to cite, and sentences saying what was seen. :mod:`.actions` builds on it to choose a step,
:mod:`.filler` to fill a reply schema.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np

from videoatlas_standin.labels import Labelled
from videoatlas_standin.language import (
    NUMBER_ASKED,
    OCCURRENCES,
    asked_kind,
    content_words,
    searched_share,
    tokens,
    word_parts,
    words_of,
)
from videoatlas_standin.meaning import ASKED_FITS, similarity
from videoatlas_standin.perception import Tile
from videoatlas_standin.policy import COUNT_COVERAGE_PCT, IMMEDIATE_S, SAME_SPAN_S, Request, Sighting
from videoatlas_standin.stays import Sighted, stays

WHOLE_SECOND_SLACK_S = 1.0
"""How far a frame may lie from a label written to whole seconds (rounded or cut off)."""


def _slack(time: float) -> float:
    """How far from ``time`` the frame its label reads may lie: a whole second's label, a second; else 0.05 s."""
    return WHOLE_SECOND_SLACK_S if float(time).is_integer() else 0.05


class Answers:
    """Judges a :class:`Request`'s evidence, with the tile, choice and action a filler has in hand."""

    def __init__(self, request: Request, seed: int = 0) -> None:
        self.req = request
        self.seed = seed
        self.focus: Tile | None = None
        self.per_choice: int | None = None
        self.intent: str | None = None
        self.span: tuple[float, float] | None = None
        """The stretch of video the chosen action looks at, when it was chosen from what the text reports."""
        self._evidence: list[Tile] | None = None
        self.told: dict[str, str] = {}
        """What a value does, told outside the text (a tool's own description), by value."""
        self.called: set[str] = set()
        """Functions called earlier in the conversation (its assistant turns' tool calls), by name."""

    def evidence_tiles(self) -> list[Tile]:
        """Tiles that hold what would answer the question (close-ups first: they are read best)."""
        if self._evidence is None:
            shown = [t for t in self.req.tiles if self.req.is_evidence(t)]
            self._evidence = sorted(shown, key=lambda t: t.cell is not None)
        return self._evidence

    def confidence(self) -> float:
        """How sure a reply about the tile in hand (else about the question) can be, from 0 to 1."""
        if self.focus is not None and self.req.is_evidence(self.focus):
            return 0.9
        return 0.5 if self.evidence_tiles() else 0.2

    def tile_within(self, span: tuple[float, float]) -> Tile | None:
        """The frame that speaks for a stretch of video: one inside it (ends included), what is asked first.

        A label read as a whole second (``01:01``) was written to that precision: the frame lies up to
        :data:`WHOLE_SECOND_SLACK_S` from it, so a stretch that ends at 60.9 s ends at the frame labelled 61.
        """
        inside = [
            t
            for t in self.req.tiles
            if t.time is not None and span[0] - _slack(t.time) <= t.time <= span[1] + _slack(t.time)
        ]
        return next((t for t in inside if self.req.is_evidence(t)), inside[0] if inside else None)

    def verdict(self, polarity: dict[str, str]) -> str:
        """The value saying the choice in hand is supported, contradicted, or not known either way."""
        i = self.per_choice
        answer = self.answer_index()
        backed = i is not None and any(i in s.choices and s.strength for s in self.sightings())
        want = "unknown"
        if i is not None and answer is not None and i == answer and backed:
            want = "yes"
        elif i is not None and answer is not None and self.sufficient():
            want = "no"
        fallback = next(v for v, p in polarity.items() if p == "unknown")
        return next((v for v, p in polarity.items() if p == want), fallback)

    def _same_as(self, tile: Tile) -> Any:
        """A test for "this cell shows the same thing": the same choices, or for counting the counted thing."""
        if self.req.counting or not self.req.choices:
            return self.req.counted_in
        shown = set(self.req.choices_in(tile))
        return lambda other: bool(shown & set(self.req.choices_in(other))) and self.req.is_evidence(other)

    def _cell_of(self, tile: Tile) -> Tile | None:
        return self.req.cell_at(tile.time) if tile.time is not None else None

    def sightings(self) -> list[Sighting]:
        """Everything seen or written down that bears on the question."""
        seen = [self.req.sighting(t) for t in self.req.tiles if not t.masked]
        seen = [s for s in seen if s.choices or s.context]
        for s in seen:
            if s.tile is not None and self.req.direction is not None and s.choices:
                s.gap = self.req.next_to_anchor(s.tile)
        written = self.req.written_sightings()
        if self.req.direction is not None:
            for s in written:
                if s.choices and s.context and re.search(self.req.direction, s.line, re.IGNORECASE):
                    s.gap = _written_gap(s.line)
        return seen + written

    def appearances(self) -> list[tuple[float, float]]:
        """Separate appearances of the counted thing: sightings grouped into stays on screen (:mod:`.stays`)."""
        found: list[Sighted] = []
        for s in self.sightings():
            if not s.context or s.start is None or s.end is None:
                continue
            if s.tile is not None and s.tile.cell is None and s.tile.evidence is None and s.tile.time is None:
                continue  # a picture without time: counted line by line in count()
            if s.tile is None:
                found.append(Sighted(s.start, s.end))
                continue
            run = self.req.run_of(s.tile, self.req.counted_in) if s.tile.cell is not None else [s.tile]
            start, end = self.req.span_of(run[0])[0], self.req.span_of(run[-1])[1]
            start = start or 0.0
            found.append(Sighted(start, end if end is not None else start, run[0].time, run[-1].time))
        absent = [t.time for t in self.req.tiles if t.time is not None and not t.masked and not self.req.counted_in(t)]
        return stays(found, absent, SAME_SPAN_S, IMMEDIATE_S)

    def count(self) -> int | None:
        """How many separate appearances were seen (None when nothing was).

        Over time (grids, timed notes) an appearance is a run of frames; in a single picture without
        tiles, every separate line that shows the thing is one.
        """
        n = len(self.appearances())
        for tile in self.req.tiles:
            if tile.cell is None and tile.evidence is None and tile.time is None and not tile.masked:
                n += sum(1 for piece in self.req.line_tiles(tile) if self.req.context_in(piece))
        return n or None

    def answer_index(self) -> int | None:
        """The best-supported choice, or None when nothing seen supports any."""
        choices = self.req.choices
        if not choices:
            return None
        if self.req.counting:
            n = self.count()
            numeric = [(i, int(c)) for i, c in enumerate(choices) if c.strip().isdigit()]
            if n is None or not numeric:
                return None
            exact = [i for i, v in numeric if v == n]
            return exact[0] if exact else min(numeric, key=lambda p: (abs(p[1] - n), p[1]))[0]
        seen = [s for s in self.sightings() if s.choices]
        if self.req.direction is not None:
            near = [s for s in seen if s.gap is not None]
            if near:
                best = min(near, key=lambda s: s.gap if s.gap is not None else 0.0)
                return best.choices[0]
        if self.req.ordering is not None:
            timed = [(s.start, i) for s in seen if s.start is not None for i in s.choices]
            if not timed:
                return None
            first = min(timed) if self.req.ordering == "first" else max(timed)
            return first[1]
        strongest = max((s.strength for s in seen), default=0)
        if strongest == 0:
            return None
        support: dict[int, int] = {}
        for s in seen:
            if s.strength == strongest:
                for i in s.choices:
                    support[i] = support.get(i, 0) + 1
        return max(support, key=lambda i: (support[i], -i)) if support else None

    def sufficient(self) -> bool:
        """Whether what was seen settles the question.

        A count over time, with choices or without, is settled only once the text says the whole video
        was searched (any part left may hold one more); with choices, a choice must be backed too. A
        count without choices in a picture without time (a board, a page) is settled by the picture.
        """
        if not self.req.choices:
            if self.req.counting:
                still = not self.appearances() and self.count() is not None
                return still or self.searched_all()
            noted = any(s.context and s.start is not None for s in self.req.written_sightings())
            return bool(self.evidence_tiles()) or noted
        idx = self.answer_index()
        if idx is None:
            return False
        if self.req.counting:
            return self.searched_all()
        seen = [s for s in self.sightings() if s.choices]
        if self.req.ordering is not None:
            return all(any(i in s.choices and s.start is not None for s in seen) for i in range(len(self.req.choices)))
        if self.req.direction is not None:
            return any(s.gap is not None and idx in s.choices for s in seen)
        return any(idx in s.choices and (s.strength == 2 or not self.req.names) for s in seen)

    def wide(self) -> bool:
        """Whether the question needs all of the video seen: a count, or which comes first or last."""
        return self.req.counting or self.req.ordering is not None

    def searched_all(self) -> bool:
        """Whether the text says (nearly) all of the video was searched (:data:`.policy.COUNT_COVERAGE_PCT`)."""
        share = searched_share(self.req.text)
        return share is not None and share >= COUNT_COVERAGE_PCT

    def cited_labels(self) -> list[str]:
        """Labels of tagged tiles showing the chosen answer (open questions: anything relevant); none for a guess."""
        idx = self.answer_index()
        if idx is None and self.req.choices and self.per_choice is None:
            return []
        out = []
        for tile in self.req.tiles:
            if tile.evidence is None or tile.masked:
                continue
            shown = self.req.choices_in(tile)
            context = self.req.context_in(tile)
            relevant = (context or shown) if idx is None else (idx in shown or (self.req.counting and context))
            if relevant:
                out.append(tile.evidence)
        if self.per_choice is not None:
            return [t.evidence for t in self.req.tiles if t.evidence and self.per_choice in self.req.choices_in(t)]
        for seen in self.req.written_sightings():  # notes labelled in the text, "[C] ..."
            label = re.match(r"\s*\[([A-Z]{1,3})\]", seen.line)
            wanted = idx in seen.choices if idx is not None else bool(seen.context or seen.choices)
            if label and (wanted or (self.req.counting and seen.context)):
                out.append(label.group(1))
        return list(dict.fromkeys(out))

    def describe(self, tile: Tile) -> str:
        """One sentence on what a tile shows, with the stretch of video it stands for."""
        where = f"cell {tile.cell}" if tile.cell is not None else f"item {tile.evidence}" if tile.evidence else "image"
        if tile.cell is None and tile.evidence is None and tile.time is not None:
            filed = self._cell_of(tile)
            if filed is not None:
                where = f"zoomed frame of cell {filed.cell}"
        when = ""
        start, end = self.when(tile)
        if start is not None:
            when = f" at {start:.1f} s" if end is None or end <= start else f" ({start:.1f}-{end:.1f} s)"
        shown = tile.text or "nothing legible"
        sentence = f"{where}{when} shows: {shown}"
        if self.req.direction is not None:
            found = self.req.anchor_for(tile)
            if found is not None:
                gap, anchor = found
                sentence += f"; {gap:.1f} s {self.req.direction} {' '.join(self.req.context_in(anchor))}"
        if tile.cell in self.req.said:
            sentence += f'; said there: "{self.req.said[tile.cell]}"'
        if tile.unreadable:
            sentence += "; some text there is too small or blurred to read"
        return sentence

    def overview(self) -> str:
        """What the images show that matters: the evidence, else the subject (cues first), and what is unreadable."""
        if not self.req.sights:
            noted = [s.line.strip() for s in self.req.written_sightings() if s.choices or s.context]
            return "no image was given" + (f"; the text says: {noted[0]}" if noted else ", so nothing could be seen")
        ev = self.evidence_tiles()
        if ev:
            text = "; ".join(self.describe(t) for t in ev[:4])
        else:
            shown = [t for t in self.req.tiles if self.req.context_in(t)]  # the question's subject, as related
            cues = [t for t in shown if self.req.is_anchor(t)] or shown
            text = (
                "related: " + "; ".join(self.describe(t) for t in cues[:3])
                if cues
                else "nothing related to the question is visible here"
            )
        unread = sum(t.unreadable for t in self.req.tiles if not t.masked)
        if unread:
            text += f"; {unread} line(s) of text are too small or blurred to read at this size"
        return text

    def asked_pair(self) -> Labelled | None:
        """The label and value pair the question asks about (its label means what the question names), if any.

        A count is a number: for "how many", only a pair whose value holds one.
        """
        pairs = [p for p in self.req.labelled() if not self.req.counting or any(c.isdigit() for c in p.value)]
        if not pairs or not self.req.question or self.req.choices:
            return None  # with choices, the answer is one of them
        labels = list(dict.fromkeys(p.label for p in pairs))
        fit = similarity([self.req.question], labels)[0]
        asked = {w.lower().removesuffix("s") for w in content_words(self.req.question) if len(w) >= 4}
        for j, label in enumerate(labels):
            if asked & {w.removesuffix("s") for w in words_of(label.lower()) if len(w) >= 4}:
                fit[j] = max(float(fit[j]), ASKED_FITS + 0.05)
        best = int(np.argmax(fit))
        return next(p for p in pairs if p.label == labels[best]) if fit[best] >= ASKED_FITS else None

    def open_answer(self) -> str:
        """The reply to a question without choices: the value of the kind it asks for.

        A description when the question asks for one; "how many times" the count of separate
        appearances (:meth:`count`, as with choices); else a label the question names gives its value;
        another "how many" the count; "what/which/who" the words read with the best evidence that the
        question does not itself hold (:meth:`read_answer`); "when" the time of the best evidence.
        What was seen, when nothing seen gives the value asked for.
        """
        kind = asked_kind(self.req.question)
        if kind == "describe":
            return self.seen_text()
        if kind == "count" and OCCURRENCES.search(self.req.question):
            return str(self.count() or 0)  # how often it is seen, not a number printed beside it
        asked = self.asked_pair()
        if asked is not None:
            return asked.value
        if kind == "count":
            return str(self.count() or 0)
        if kind == "time":
            when = self.evidence_time()
            if when is not None:
                return clock(when)
        if kind == "value":
            read = self.read_answer()
            if read:
                return read
        return self.seen_text()

    def seen_text(self) -> str:
        """What was seen that bears on the question, as sentences (else what could be read at all)."""
        ev = self.evidence_tiles()
        if not ev:
            read = [t.text for t in self.req.tiles if t.text and not t.masked]
            return ("I can read: " + "; ".join(read[:4])) if read else "I could not find the answer in what I saw."
        return "Seen: " + "; ".join(self.describe(t) for t in ev[:3])

    def ranked_evidence(self) -> list[Tile]:
        """The evidence, the tiles showing more of what the question names first (close-ups first among equals)."""
        return sorted(self.evidence_tiles(), key=lambda t: -len(self.req.context_in(t)))

    def evidence_time(self) -> float | None:
        """When the best evidence was seen (the start of its run of frames), else the first note's time."""
        for tile in self.ranked_evidence():
            start, _ = self.when(tile)
            if start is not None:
                return start
        noted = [s.start for s in self.req.written_sightings() if s.context and s.start is not None]
        return noted[0] if noted else None

    def when(self, tile: Tile) -> tuple[float | None, float | None]:
        """The stretch a tile's sighting covers: a grid cell's whole run of frames showing the same thing."""
        start, end = self.req.span_of(tile)
        if start is not None and tile.cell is not None and self.req.is_evidence(tile):
            run = self.req.run_of(tile, self._same_as(tile))
            first = self.req.span_of(run[0])[0]
            start, end = (start if first is None else first), self.req.span_of(run[-1])[1]
        return start, end

    def read_answer(self) -> str:
        """The words read with the best evidence that the question does not itself hold ("" when none).

        In a tile, the line that shows what the question names comes first, then the lines nearest it;
        the first line with words of its own gives them, as read (a word run into a number, ``GATE27``,
        as its two parts). Else a written note gives the word right after what the question names
        (:func:`written_value`). A question that asks for a number or a code takes only the words
        written with digits.
        """
        asked = set(tokens(self.req.question))
        digits = bool(NUMBER_ASKED.search(self.req.question))
        for tile in self.ranked_evidence():
            pieces = self.req.line_tiles(tile)
            named = [p for p in pieces if self.req.context_in(p)]
            if not named:
                continue

            def distance(piece: Tile, named: list[Tile] = named) -> float:
                return min(abs(piece.x - n.x) + abs(piece.y - n.y) for n in named)

            for piece in sorted(pieces, key=lambda p: (p not in named, distance(p))):
                words = [p for w in piece.text.split() for p in word_parts(w.strip(_PUNCT))]
                new = [w for w in words if _own_word(w, asked, digits)]
                if new:
                    return " ".join(new)
        for seen in self.req.written_sightings():  # then what notes write right after what the question names
            value = written_value(seen.line, {t for c in seen.context for t in tokens(c)}, asked, digits)
            if value:
                return value
        return ""

    def _guess(self, n: int) -> int:
        """A deterministic pick when nothing supports any choice (the stand-in's own; the agent never guesses)."""
        digest = hashlib.sha256(f"{self.seed}:{self.req.question}".encode()).digest()
        return digest[0] % max(1, n)

    def _described_tiles(self) -> list[Tile]:
        """Tiles to report one by one: the evidence, else every tile with text (an unlabelled image line by line)."""
        shown = self.evidence_tiles() or [t for t in self.req.tiles if t.text and not t.masked]
        out: list[Tile] = []
        for tile in shown:
            if tile.cell is None and tile.evidence is None and len(tile.lines) > 1:
                out.extend(self.req.line_tiles(tile))
            else:
                out.append(tile)
        return out


def clock(seconds: float) -> str:
    """A time of the video as a clock reading (``1:05``, ``1:02:03``, ``0:07.5``)."""
    whole = round(seconds, 1)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:04.1f}" if whole != int(whole) else f"{int(secs):02d}"
    return f"{int(hours)}:{int(minutes):02d}:{text}" if hours else f"{int(minutes)}:{text}"


def _written_gap(line: str) -> float | None:
    match = re.search(r"(\d+(?:\.\d+)?)\s*s\s+(?:after|before)\b", line)
    return float(match.group(1)) if match else None


_PUNCT = ".,;:!?()[]\"'"
_UNITS = {"s", "sec", "secs", "second", "seconds", "min", "minutes"}


def written_value(line: str, named: set[str], asked: set[str], digits: bool) -> str:
    """The word a note writes right after what the question names, in the same clause ("GATE 27; ..." gives 27).

    Words the question holds, times (``03:27.0``, ``207.0 s``) and, when a number is asked, words
    without digits are passed over; "" when the clause has none.
    """
    for clause in line.split(";"):
        raw = clause.split()
        words = [(p, raw[i + 1].lower() if i + 1 < len(raw) else "") for i, w in enumerate(raw)
                 for p in word_parts(w.strip(_PUNCT))]  # fmt: skip
        at = next((i for i, (w, _) in enumerate(words) if set(tokens(w)) & named), None)
        for word, after in words[at + 1 :] if at is not None else []:
            if ":" not in word and after.strip(_PUNCT) not in _UNITS and _own_word(word, asked, digits):
                return word
    return ""


def _own_word(word: str, asked: set[str], digits: bool) -> bool:
    """A word read that the question does not itself hold, written with digits when a number is asked."""
    return bool(tokens(word)) and not set(tokens(word)) <= asked and (not digits or any(ch.isdigit() for ch in word))
