"""How the stand-in VLM decides: it fills any JSON schema from what it read, matched against the request.

The stand-in understands a request the way a small, careful model would (:mod:`.language`): the
question, its answer choices (labelled lines, an inline list, or an enum in the reply schema),
and the question's other content words, its *context* (what the question says the answer sits
with: a place, a name, an anchor moment, or the thing to count). It reads the images
(:mod:`.perception`) tile by tile and judges each tile:

* a tile that shows a choice together with the context is *evidence*; a choice alone is weak
  evidence, enough only when the question names nothing (no capitalised, quoted or numbered
  words) that the answer should be seen with;
* for "how many" questions every separate appearance of the context is evidence, one per run of
  consecutive frames;
* for "right after / before X" questions, the first choice shown after (before) a frame showing X
  within :data:`IMMEDIATE_S` seconds is evidence;
* a tile that shows the context in only some of its image's tiles is an *anchor* worth a closer look.

It then fills the requested schema field by field, guided by field names and enum values the way
a model reads them (an action enum by what its values mean, ids, answers, counts, booleans of
sufficiency, directions, descriptions, confidences, times). It never opens a file or ground truth.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import statistics
from dataclasses import dataclass, field
from typing import Any

from videoatlas_standin.labels import Labelled, labelled, letter_pairs, written_pairs
from videoatlas_standin.language import (
    AFTER,
    BEFORE,
    COUNT_PATTERN,
    LABELLED_CHOICE,
    ORDER_FIRST,
    ORDER_LAST,
    QUOTED,
    SPOKEN,
    content_words,
    find_choices,
    find_question,
    image_position,
    norm,
    read_words,
    time_spans,
    timed_reports,
    tokens,
    unsought,
    words_of,
)
from videoatlas_standin.perception import Sight, Tile
from videoatlas_standin.said import said_by_cell
from videoatlas_standin.sheets import sheet_cells, timed_tiles

IMMEDIATE_S = 30.0
"""How far "right after" or "just before" reaches: in plain speech, seconds, not minutes."""
SAME_SPAN_S = 0.25
"""Two sightings whose written time spans are closer than this are one appearance (written values are rounded)."""
COUNT_COVERAGE_PCT = 99.0
"""A count is only final once the text says this share of the video was searched: any part left may hold one more."""
_NAMES = re.compile(r"(?<!\w)[\"“'‘]([^\"”'’]{2,60})[\"”'’](?!\w)")
"""A quoted phrase; an apostrophe inside a word (``Bob's``) quotes nothing."""


@dataclass(slots=True)
class Sighting:
    """Something seen: where (tile or line of text), when (a span), and which choices and words it shows."""

    start: float | None
    end: float | None
    choices: list[int]
    context: list[str]
    tile: Tile | None = None
    line: str = ""
    strength: int = 0
    gap: float | None = None
    """For "after/before X" questions: seconds between X and this sighting, when known."""


@dataclass(slots=True)
class Request:
    """What the stand-in understood of a request: the question, the choices, the images' tiles."""

    text: str
    sights: list[Sight]
    question: str
    choices: list[str]
    context: list[str]
    """The names the question gives (capitalised, quoted or numbered words), else its content words."""
    names: bool
    """Whether the question names something: then a choice must be seen with a name to be evidence."""
    counting: bool = False
    ordering: str | None = None
    """``"first"`` or ``"last"`` for questions about which choice comes first or last."""
    direction: str | None = None
    """``"after"`` or ``"before"`` for questions about what comes right after or before something."""
    tiles: list[Tile] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    """What the functions called earlier returned (the conversation's ``tool`` messages), in order."""
    spoken: bool = False
    """Whether the question asks what is said (heard), not what is shown."""
    said: dict[int, str] = field(default_factory=dict)
    """For a question about what is said: what the text reports of each grid cell (:mod:`.said`), by cell id."""
    _words: dict[int, tuple[set[str], str]] = field(default_factory=dict)
    _cells: dict[int, list[Tile]] = field(default_factory=dict)
    _evidence: dict[int, bool] = field(default_factory=dict)
    _written: list[Sighting] | None = None
    _pieces: dict[int, list[Tile]] = field(default_factory=dict)
    _labelled: list[Labelled] | None = None

    @classmethod
    def understand(
        cls,
        texts: list[str],
        sights: list[Sight],
        schema: dict[str, Any] | None = None,
        results: list[str] | None = None,
    ) -> Request:
        """Question, choices and context from the text (and schema); ``results``: what earlier calls returned."""
        text = "\n".join(texts)
        question = find_question(texts)
        choices = find_choices(text, question) or _enum_choices(schema or {})
        choice_words = {t for c in choices for t in tokens(c)}
        words = [w for w in content_words(question) if not set(tokens(w)) <= choice_words]
        quoted = [q for q in _NAMES.findall(question) if not set(tokens(q)) <= choice_words]
        named = quoted + [w for w in words if _is_name(w, question) and not any(w in q for q in quoted)]
        # When the question names something (a title, a label), that name is what the answer is seen
        # with; its other words only describe (a "sign", a "scene") and may be written on every frame.
        names = bool(named)
        context = named or words
        counting = bool(COUNT_PATTERN.search(question))
        direction = None
        if not counting and context:
            after, before = AFTER.search(question), BEFORE.search(question)
            if after or before:
                direction = "after" if after and (not before or after.start() < before.start()) else "before"
        ordering = None
        if not counting and direction is None and len(choices) >= 2:
            if ORDER_LAST.search(question) and not ORDER_FIRST.search(question):
                ordering = "last"
            elif ORDER_FIRST.search(question):
                ordering = "first"
        # The reader caches what it saw per image; this request's copies carry which image they are in.
        sights = [
            dataclasses.replace(s, tiles=[dataclasses.replace(t, image=n) for t in s.tiles])
            for n, s in enumerate(sights)
        ]
        tiles = [t for s in sights for t in s.tiles]
        position = image_position(question, len(sights))
        if position is not None:  # "the second image": only what that one shows answers
            tiles = [t for t in tiles if t.image == position]
        spoken = bool(SPOKEN.search(question))
        args = (text, sights, question, choices, context, names, counting, ordering, direction, tiles)
        return cls(*args, list(results or []), spoken, said_by_cell(text, tiles, choices) if spoken else {})

    # -- what a tile shows ---------------------------------------------------------------------

    def _seen(self, tile: Tile) -> tuple[set[str], str]:
        key = id(tile)
        if key not in self._words:  # a cell's words: what it shows, and what the text says was said there
            known = f"{tile.text} {self.said[tile.cell]}" if tile.cell in self.said else tile.text
            self._words[key] = (read_words(known), norm(known))
        return self._words[key]

    def shows(self, tile: Tile, phrase: str) -> bool:
        """Whether the tile's text holds ``phrase``: every word of it, or (for 5+ characters) the whole run together.

        Short words must be read as words ("RED" is not in "CREDITS"; "GATE" in "GATE27" is one,
        :func:`.language.read_words`); longer ones may be found inside a run of text the reader did
        not split ("GATE" in "EASTGATE" is not, "KX4417" is).
        """
        words, flat = self._seen(tile)
        whole = norm(phrase)
        if len(whole) >= 5 and whole in flat:
            return True
        parts = tokens(phrase)
        return bool(parts) and all(p in words or (len(p) >= 5 and p in flat) for p in parts)

    def choices_in(self, tile: Tile) -> list[int]:
        """Choices the tile shows; a choice whose text is part of another shown choice's is left out."""
        if tile.masked:
            return []
        shown = [i for i, c in enumerate(self.choices) if len(norm(c)) >= 3 and self.shows(tile, c)]
        return [i for i in shown if not any(j != i and norm(self.choices[i]) in norm(self.choices[j]) for j in shown)]

    def context_in(self, tile: Tile) -> list[str]:
        """Context words the tile shows."""
        if tile.masked:
            return []
        return [w for w in self.context if self.shows(tile, w)]

    def sighting(self, tile: Tile) -> Sighting:
        """What a tile shows, judged against the question."""
        start, end = self.span_of(tile)
        seen = Sighting(start, end, self.choices_in(tile), self.context_in(tile), tile=tile)
        if seen.choices:
            seen.strength = 2 if seen.context else 1
        return seen

    # -- time order inside one image --------------------------------------------------------------

    def cells_of(self, tile: Tile) -> list[Tile]:
        """The time-labelled grid cells of the tile's image and of the pages that continue it, in time order."""
        if tile.image not in self._cells:
            self._cells[tile.image] = sheet_cells(self.sights, tile.image)
        return self._cells[tile.image]

    def span_of(self, tile: Tile) -> tuple[float | None, float | None]:
        """The stretch of video a tile stands for: from its time to the next cell's (a point if unknown)."""
        if tile.time is None:
            return None, None
        cells = self.cells_of(tile) if tile.cell is not None else []
        times = [t.time for t in cells if t.time is not None]
        later = [t for t in times if t > tile.time]
        if later:
            return tile.time, min(later)
        steps = [b - a for a, b in itertools.pairwise(times) if b > a]
        return tile.time, tile.time + (statistics.median(steps) if steps else 0.0)

    def run_of(self, tile: Tile, shows: Any) -> list[Tile]:
        """The consecutive cells around ``tile`` (itself included) for which ``shows(cell)`` holds."""
        cells = self.cells_of(tile)
        at = next((i for i, t in enumerate(cells) if t is tile), None)
        if at is None:
            return [tile]
        lo = at
        while lo > 0 and shows(cells[lo - 1]):
            lo -= 1
        hi = at
        while hi + 1 < len(cells) and shows(cells[hi + 1]):
            hi += 1
        return cells[lo : hi + 1]

    def counted_in(self, tile: Tile) -> bool:
        """For counting: whether the tile shows the thing counted."""
        return bool(self.context_in(tile))

    def next_to_anchor(self, tile: Tile) -> float | None:
        """For "right after (before) X": seconds from the nearest X to this choice, or None if not right next to it."""
        found = self.anchor_for(tile)
        return found[0] if found is not None else None

    def anchor_for(self, tile: Tile) -> tuple[float, Tile] | None:
        """The X that a choice comes right after (before), with the seconds between them.

        Walking from the tile towards X in time order through its image (and the pictures that continue
        it as pages of one sheet: :func:`.sheets.sheet_cells`), X must be met within :data:`IMMEDIATE_S`
        seconds before any other choice is (frames showing neither are skipped).
        """
        if self.direction is None or tile.time is None or not self.choices_in(tile):
            return None
        cells = self.cells_of(tile) if tile.cell is not None else timed_tiles(self.sights[tile.image])
        at = next((i for i, t in enumerate(cells) if t is tile), None)
        if at is None:
            return None
        towards = reversed(cells[:at]) if self.direction == "after" else iter(cells[at + 1 :])
        for other in towards:
            gap = abs((other.time or 0.0) - tile.time)
            if gap > IMMEDIATE_S or self.choices_in(other):
                return None
            if self.context_in(other):
                return gap, other
        return None

    # -- judgement of tiles ----------------------------------------------------------------------

    def is_evidence(self, tile: Tile) -> bool:
        """Whether the tile holds what would answer the question."""
        if id(tile) not in self._evidence:
            self._evidence[id(tile)] = self._judge(tile)
        return self._evidence[id(tile)]

    def _judge(self, tile: Tile) -> bool:
        if tile.masked:
            return False
        if self.counting or not self.choices:
            return bool(self.context_in(tile))
        seen = self.sighting(tile)
        if not seen.choices:
            return False
        if self.direction is not None:
            return self.next_to_anchor(tile) is not None
        return seen.strength == 2 or not self.names

    def is_anchor(self, tile: Tile) -> bool:
        """Whether the tile shows a context word that most of its image does not (a cue worth a closer look)."""
        if tile.masked:
            return False
        peers = [t for t in self.sights[tile.image].tiles if not t.masked]
        for word in self.context_in(tile):
            if len(peers) <= 1 or sum(1 for t in peers if self.shows(t, word)) <= len(peers) / 2:
                return True
        return False

    def relevance(self, tile: Tile) -> int:
        """How much a tile matters: evidence, then anchors, then a choice alone, then common context."""
        if tile.masked:
            return 0
        if self.is_evidence(tile):
            return 8
        if self.is_anchor(tile):
            return 4
        if self.choices_in(tile):
            return 2
        return 1 if self.context_in(tile) else 0

    def line_tiles(self, tile: Tile) -> list[Tile]:
        """A tile's lines as tiles of their own (a picture without grid labels, read line by line)."""
        if id(tile) not in self._pieces:  # kept for the request: what is known of a tile is keyed by its id
            self._pieces[id(tile)] = [
                Tile(None, None, tile.time, line.x, line.y, [line], image=tile.image) for line in tile.lines
            ]
        return self._pieces[id(tile)]

    def labelled(self) -> list[Labelled]:
        """The label and value pairs the pictures show (signs, forms, boards), then those calls' results write."""
        if self._labelled is None:
            self._labelled = [pair for tile in self.tiles for pair in labelled(tile)]
            self._labelled += [pair for text in self.results for pair in written_pairs(text)]
        return self._labelled

    def letter_pairs(self) -> list[Labelled]:
        """Lines without digits split every way into a short label and the rest (``CITY PARIS``): see labels.py."""
        return [pair for tile in self.tiles for pair in letter_pairs(tile)]

    def grid_tiles(self) -> list[Tile]:
        """Grid cells of the images, in reading order."""
        return [t for t in self.tiles if t.cell is not None]

    def close_ups(self) -> list[Tile]:
        """Whole-image tiles of a request that also holds a grid: close-ups of one moment."""
        if not self.grid_tiles():
            return []
        return [t for t in self.tiles if t.cell is None and t.evidence is None and not t.masked]

    def cell_at(self, time: float) -> Tile | None:
        """The grid cell whose span holds ``time``."""
        for tile in self.grid_tiles():
            start, end = self.span_of(tile)
            if start is not None and end is not None and start - 0.005 <= time < max(end, start + 0.01):
                return tile
        return None

    # -- what the text says ----------------------------------------------------------------------

    def written_lines(self) -> list[str]:
        """Lines that report something (not the question or the choices), less any search (`.language.unsought`)."""
        out = []
        runs = [tokens(c) for c in self.choices if len(norm(c)) >= 3]  # whole words in a row: "cell 40" holds no
        for line in self.text.splitlines():  # "140", and "BAY 7 at 1:40" no "BAY 40"
            if not line.strip() or (self.question and self.question in line) or _is_choice_line(line, self.choices):
                continue
            words = tokens(line)
            if sum(1 for r in runs if any(words[i : i + len(r)] == r for i in range(len(words)))) >= 2:
                continue  # a list of options, not a report of one
            out.append(unsought(line))
        return out

    def heard(self) -> bool:
        """Whether the text already reports speech: words quoted at a time of the video."""
        return any(time_spans(line) and QUOTED.search(line) for line in self.written_lines())

    def written_sightings(self) -> list[Sighting]:
        """Lines of text that mention a choice or the context: what earlier steps (or the user) wrote down."""
        if self._written is None:
            self._written = self._read_lines()
        return self._written

    def _read_lines(self) -> list[Sighting]:
        out = []
        for line, (part, spans) in ((ln, r) for ln in self.written_lines() for r in timed_reports(ln)):
            probe = Tile(None, None, None, 0, 0)
            self._words[id(probe)] = (read_words(part), norm(part))
            choices, context = self.choices_in(probe), self.context_in(probe)
            del self._words[id(probe)]
            if not choices and not context:
                continue
            start = min((a for a, _ in spans), default=None)
            end = max((b for _, b in spans), default=None)
            seen = Sighting(start, end, choices, context, line=line)
            if choices:
                seen.strength = 2 if context else 1
            out.append(seen)
        return out

    def already_noted(self, tile: Tile) -> bool:
        """Whether the text already records what this tile shows at this moment."""
        start, end = self.span_of(tile)
        if start is None:
            return False
        if self.counting or not self.choices:
            run = self.run_of(tile, self.counted_in)
            start, end = self.span_of(run[0])[0], self.span_of(run[-1])[1]
        assert start is not None
        return self.noted(tile, start, end if end is not None else start)

    def noted(self, tile: Tile, start: float, end: float) -> bool:
        """Whether a written line names what the tile shows, at a time within ``start``-``end``."""
        shown = set(self.choices_in(tile))
        words = set(self.context_in(tile))
        for seen in self.written_sightings():
            if seen.start is None or seen.end is None:
                continue
            same = bool(shown & set(seen.choices)) if shown else bool(words & set(seen.context))
            if same and seen.start <= end + SAME_SPAN_S and seen.end >= start - SAME_SPAN_S:
                return True
        return False


def _is_name(word: str, question: str) -> bool:
    """A capitalised word that does not start a sentence, an all-capitals word, or one with digits."""
    if any(ch.isdigit() for ch in word) or (word.isupper() and len(word) >= 2):
        return True
    at = question.find(word)
    return word[:1].isupper() and at > 0 and not re.search(r"[.!?:]\s*$", question[:at])


def _is_choice_line(line: str, choices: list[str]) -> bool:
    """A line that lists one choice (``B. text``), as a question's option list does."""
    labelled = LABELLED_CHOICE.match(line)
    return labelled is not None and any(norm(c) == norm(labelled.group(2)) for c in choices)


def _enum_choices(schema: dict[str, Any]) -> list[str]:
    """The options of an answer-like string enum in the reply schema (when the text lists none)."""
    found: list[str] = []

    def walk(node: Any, name: str) -> None:
        if found or not isinstance(node, dict):
            return
        values = node.get("enum")
        answer_like = {"answer", "choice", "option", "label", "selection", "selected"} & set(words_of(name))
        if answer_like and isinstance(values, list) and len(values) >= 2 and all(isinstance(v, str) for v in values):
            found.extend(values)
            return
        for key, sub in (node.get("properties") or {}).items():
            walk(sub, key)
        for sub in (node.get("$defs") or {}).values():
            walk(sub, name)
        for key in ("items", "anyOf", "oneOf", "allOf"):
            subs = node.get(key)
            for sub in subs if isinstance(subs, list) else [subs]:
                walk(sub, name)

    walk(schema, "")
    return found
