"""The stand-in's one policy: what it reads, what it takes to be asked, what it answers, how it fills a reply.

docs/standin.md states it as a decision table; this module is that table, row by row (each function names the rows
it implements; row 1, reading, is :mod:`.perception`'s). Meaning is multilingual-e5-small's (:mod:`.meaning`),
against thresholds calibrated in tests/standin/test_standin_generic.py. No word here names a field, action or tool
of any client.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from videoatlas_standin.labels import Labelled, labelled, written_pairs
from videoatlas_standin.meaning import phrase, similarity, words_of
from videoatlas_standin.perception import Sight, Tile
from videoatlas_standin.schema import (
    Schema,
    items_bounds,
    kind,
    least_number,
    nullable,
    number_in,
    string_in,
    tag_of,
)

CLOSE = 0.025
"""A text is close in meaning to the question when their similarity (:func:`.meaning.similarity`) reaches this."""
FITS = 0.045
"""A label means what a question or a field asks for when their similarity reaches this."""
ANSWER_ANCHOR = "the answer"
"""The policy's one e5 anchor phrase: a string field whose name and description come close to it holds the answer."""
ANSWER_FITS = 0.06
"""How close (similarity) a string field must come to :data:`ANSWER_ANCHOR` to hold the answer."""
SHOWN = 6
"""Items an account of what was read quotes at most."""
ABOUT_CHARS = 400
"""Characters of what was read added to the question when options are weighed by their descriptions."""

_OPTION = re.compile(r"^\s*(?:\(([A-J])\)|([A-J])[.):])\s+(\S.*?)\s*$")
_TIMED = re.compile(r"^\s*\[?\d{1,2}:\d{2}")
_TAG = re.compile(r"^\s*\[([A-Z]{1,3})\]")
_WORD = re.compile(r"[^\W_]+")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_EDGE = " \t-*:;,.\u2022"


def tokens(text: str) -> list[str]:
    """The case-folded runs of letters and digits of ``text``."""
    return [w.casefold() for w in _WORD.findall(text)]


def holds(words: list[str], wanted: list[str]) -> bool:
    """Whether ``wanted`` stands in ``words`` as whole tokens in a row, or, for two or more, run together by OCR.

    A run-together choice stands where the word before ran into its first token (``tagQZ-7781`` holds ``QZ-7781``).
    """
    if not wanted:
        return False
    line, run = f" {' '.join(words)} ", " ".join(wanted)
    if f" {run} " in line:
        return True
    return len(wanted) > 1 and (f"{run} " in line or f"{''.join(wanted)} " in line)


@dataclass(frozen=True, slots=True)
class Item:
    """One thing read: a line of a tile, or a line of the request's text or of a tool's result."""

    text: str
    tile: Tile | None
    """Where it was read; None for the request's own text."""
    tag: str | None = None
    """For a line of text: the ``[tag]`` it starts with, its id."""

    @property
    def id(self) -> int | str | None:
        """The id it is cited by: its tile's index or tag, its picture's number, or its line's tag."""
        if self.tile is None:
            return self.tag
        tile = self.tile
        return tile.cell if tile.cell is not None else tile.evidence if tile.evidence is not None else tile.image

    @property
    def context(self) -> str:
        """The text its closeness to the question is judged on: all its tile shows, or the line."""
        return self.tile.text if self.tile is not None else self.text

    def shown(self) -> str:
        """The item as an account quotes it: its text, and where (``#id``) and when it was read."""
        if self.tile is None:
            return self.text
        when = f", {self.tile.time:g} s" if self.tile.time is not None else ""
        return f"{self.text} [#{self.id}{when}]"


@dataclass(slots=True)
class Reading:
    """A request as the policy understands it: question, choices, what was read, and the answer."""

    question: str
    choices: list[str]
    lettered: bool
    """Whether the choices came from lettered option lines (a letter then stands for each)."""
    images: int
    items: list[Item]
    lines: list[str]
    """The request's own text lines (not tool results): where options are described."""
    close: list[bool]
    support: list[float] = dataclasses.field(default_factory=list)
    index: int | None = None
    """The chosen choice (None without choices)."""
    answer: str = ""
    """The answer's text: the chosen choice, or an open question's value ("" when declined)."""
    read: bool = False
    """Whether the answer was read (support above 0, or an open question's value found)."""
    weighed: tuple[tuple[str, float], ...] = ()
    """An open question's candidates, each with how far its fit passes the bar, in nats (:func:`_open_candidates`)."""

    def choice_shares(self) -> list[float]:
        """Rule 8: the answer's shares among the choices, the softmax of their support (an item read, one nat)."""
        return softmax(self.support)

    def truth_shares(self) -> list[float]:
        """Rule 8: a statement's shares of false and true, each item read close to it one nat for true.

        As for a boolean field, what counts is whether something read bears on it, not the statement or its negation.
        """
        return softmax([0.0, float(sum(self.close))])

    def open_shares(self) -> list[tuple[str | None, float]]:
        """Rule 8: an open question's shares among its candidates and declining (None, at 0 nats), by each's best."""
        best: dict[str | None, float] = {}
        for value, nats in self.weighed:
            best[value] = max(nats, best.get(value, nats))
        best.setdefault(None, 0.0)
        return list(zip(best, softmax(list(best.values())), strict=True))

    def holds_choice(self, item: Item) -> list[int]:
        """The choices ``item`` holds."""
        words = tokens(item.text)
        return [c for c, choice in enumerate(self.choices) if holds(words, tokens(choice))]

    def ranked(self) -> list[Item]:
        """Items holding a choice or close to the question: the answer's, then the close, then the rest; read order."""
        held = [self.holds_choice(item) for item in self.items]
        bearing = [n for n, near in enumerate(self.close) if held[n] or near]
        return [self.items[n] for n in sorted(bearing, key=lambda n: (self.index not in held[n], not self.close[n], n))]

    def ids(self) -> list[int | str]:
        """The ids of the tiles (and tagged lines) where something bearing on the question was read, ranked."""
        return list(dict.fromkeys(item.id for item in self.ranked() if item.id is not None))

    def bearing_tiles(self) -> list[Tile]:
        """The tiles where something bearing on the question was read, ranked as :meth:`ranked`."""
        return list({id(item.tile): item.tile for item in self.ranked() if item.tile is not None}.values())

    def account(self) -> str:
        """A short plain account of what was read that bears on the question ("" when nothing does)."""
        return "; ".join(list(dict.fromkeys(item.shown() for item in self.ranked()))[:SHOWN])

    def about(self) -> str:
        """The question and what was read that bears on it: what options are weighed against."""
        return f"{self.question} {self.account()}".strip()[:ABOUT_CHARS]

    def reply_text(self) -> str:
        """A plain-text reply: the answer, else what was read that bears on the question."""
        return self.answer or self.account()

    def for_tile(self, tile: Tile) -> Reading:
        """The same request judged on what one tile shows."""
        kept = [n for n, item in enumerate(self.items) if item.tile is tile]
        items, close = [self.items[n] for n in kept], [self.close[n] for n in kept]
        return _decided(dataclasses.replace(self, items=items, close=close))

    def description(self, name: str, given: str = "") -> str:
        """What the request says ``name`` is: its line minus the name, else ``given``, else the name's words."""
        found = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])", re.IGNORECASE)
        named = [line for line in self.lines if found.search(line)]
        first = [line for line in named if found.match(line.lstrip(_EDGE))]
        for line in first + named:
            said = found.sub(" ", line, count=1).strip(_EDGE + " ")
            if said:
                return said
        return given.strip() or " ".join(words_of(name)) or name

    def choose(self, names: list[str], given: list[str] | None = None) -> int:
        """Rule 7 (and 6's variants): which of ``names`` fits the question and what was read best, by description."""
        about = self.about()
        if len(names) < 2 or not about:
            return 0
        described = [self.description(n, g) for n, g in zip(names, given or [""] * len(names), strict=True)]
        scores = similarity([about], described)[0]
        best = int(np.argmax(scores))
        # A lead smaller than what "close" means is no lead: the first listed, as on a tie.
        return best if scores[best] - max(np.delete(scores, best)) >= CLOSE else 0


def understand(texts: list[tuple[str, str]], sights: list[Sight], schemas: list[dict[str, Any]]) -> Reading:
    """Rules 1-5 for a request: its texts as ``(role, text)``, what was read in its images, its reply schemas."""
    question = _question(texts)
    lines = [ln.strip() for role, text in texts if role != "tool" for ln in text.splitlines() if ln.strip()]
    options = _options(lines)
    choices = options or _enum_choices(schemas, question)
    tiles = [dataclasses.replace(t, image=n) for n, sight in enumerate(sights) for t in sight.tiles]
    items = [Item(line.text, tile) for tile in tiles if not tile.masked for line in tile.lines]
    wanted = [tokens(c) for c in choices]
    for role, text in texts:
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line == question:
                continue
            named = sum(holds(tokens(line), w) for w in wanted)
            if role == "tool" or _TIMED.match(line) or (named == 1 and not _OPTION.match(line)):
                tag = _TAG.match(line)
                items.append(Item(line, None, tag.group(1) if tag else None))
    reading = Reading(question, choices, bool(options), len(sights), items, lines, _close(question, items))
    return _decided(reading)


def _close(question: str, items: list[Item]) -> list[bool]:
    """Whether each item is close in meaning to the question (judged on its context)."""
    if not question or not items:
        return [False] * len(items)
    contexts = list(dict.fromkeys(item.context for item in items))
    fit = dict(zip(contexts, similarity([question], contexts)[0], strict=True))
    return [bool(fit[item.context] >= CLOSE) for item in items]


def _decided(reading: Reading) -> Reading:
    """Rules 4 and 5: the support of each choice and the answer, or the open question's value."""
    if reading.choices:
        support = [0.0] * len(reading.choices)
        for item, near in zip(reading.items, reading.close, strict=True):
            for c in reading.holds_choice(item):
                support[c] += 2.0 if near else 1.0
        index = max(range(len(support)), key=lambda c: (support[c], -c))
        return dataclasses.replace(
            reading, support=support, index=index, answer=reading.choices[index], read=support[index] > 0
        )
    weighed = _open_candidates(reading) if reading.question else []
    best = max(range(len(weighed)), key=lambda n: (weighed[n][1], -n)) if weighed else None
    answer = weighed[best][0] if best is not None and weighed[best][1] >= 0 else ""
    return dataclasses.replace(
        reading, support=[], index=None, answer=answer, read=bool(answer), weighed=tuple(weighed)
    )


def _open_candidates(reading: Reading) -> list[tuple[str, float]]:
    """Rule 5's candidates, each with how far its fit passes its bar, in steps of :data:`CLOSE` (nats).

    The values printed with a label (bar: :data:`FITS` for the label), and, when none passes, the lines read (bar:
    :data:`CLOSE`). The first of the best is the answer when it passes (0 or more); else it declines.
    """
    pairs = pairs_of(reading.items)
    out: list[tuple[str, float]] = []
    if pairs:
        fit = similarity([reading.question], [p.label for p in pairs])[0]
        out = [(p.value, (float(f) - FITS) / CLOSE) for p, f in zip(pairs, fit, strict=True)]
        if any(nats >= 0 for _, nats in out):
            return out
    texts = list(dict.fromkeys(item.text for item in reading.items))
    if texts:
        fit = similarity([reading.question], texts)[0]
        out += [(text, (float(f) - CLOSE) / CLOSE) for text, f in zip(texts, fit, strict=True)]
    return out


def softmax(weights: list[float]) -> list[float]:
    """Shares of 1 in proportion to ``exp(weight)``."""
    if not weights:
        return []
    top = max(weights)
    exps = [math.exp(w - top) for w in weights]
    total = sum(exps)
    return [e / total for e in exps]


def weigh(question: str, text: str, choices: list[str]) -> Reading:
    """Rules 3 and 4 (or 5) for a text-only decision: every line of ``text`` read, the ``choices`` given."""
    items = [Item(line.strip(), None) for line in text.splitlines() if line.strip()]
    return _decided(Reading(question, list(choices), False, 0, items, [], _close(question, items)))


def pairs_of(items: list[Item]) -> list[Labelled]:
    """The label and value pairs among what was read: printed in its tiles, or written in its lines of text."""
    tiles = {id(item.tile): item.tile for item in items if item.tile is not None}
    out = [pair for tile in tiles.values() for pair in labelled(tile)]
    return out + [pair for item in items if item.tile is None for pair in written_pairs(item.text)]


def _question(texts: list[tuple[str, str]]) -> str:
    """Rule 2: the last line ending in "?" (the user's, else anyone's); else the last line with a "?" (likewise)."""
    for ends in (True, False):
        for everyone in (False, True):
            lines = [ln.strip() for role, text in texts if role == "user" or everyone for ln in text.splitlines()]
            asked = [ln for ln in lines if ln.endswith("?") or (not ends and "?" in ln)]
            if asked:
                return asked[-1]
    return ""


def _options(lines: list[str]) -> list[str]:
    """Rule 2: the last run of lettered option lines (A, B, C... in order, two or more)."""
    runs: list[list[str]] = [[]]
    for line in lines:
        found = _OPTION.match(line)
        letter = (found.group(1) or found.group(2)) if found else None
        if found and letter is not None and ord(letter) - ord("A") == len(runs[-1]):
            runs[-1].append(found.group(3))
        elif found and letter == "A":
            runs.append([found.group(3)])
        elif runs[-1]:
            runs.append([])
    listed = [run for run in runs if len(run) >= 2]
    return listed[-1] if listed else []


def _enum_choices(schemas: list[dict[str, Any]], question: str) -> list[str]:
    """Rule 2: the first string enum of the reply schemas whose every member the question names (two or more)."""
    words = tokens(question)
    enums = (node["enum"] for schema in schemas for node in _objects(schema) if isinstance(node.get("enum"), list))
    for members in enums:
        if len(members) >= 2 and all(isinstance(m, str) and holds(words, tokens(m)) for m in members):
            return [str(m) for m in members]
    return []


_DEPTH = 24
"""Nesting a filled value reaches at most (a schema that refers to itself stops there with empty values)."""


class Filler:
    """Rule 6: a value for a reply schema, field by field, from what a :class:`Reading` holds.

    const -> the const; the answer field -> the answer; an integer enum -> the id of a tile bearing on the question;
    another enum, tagged variants -> the one whose description fits best; another scalar -> the value printed with
    the label that means the field; else the honest empty value. Arrays of ids hold the ids bearing on the question,
    arrays of objects one object per such tile (docs/standin.md's row 6 has the details).
    """

    def __init__(self, reading: Reading, root: dict[str, Any]) -> None:
        self.reading = reading
        self.schema = Schema(root)
        self.answer_field = _answer_field(self.schema)
        self._pairs: list[Labelled] | None = None

    def for_tile(self, tile: Tile) -> Filler:
        """The same filler, judging what one tile shows."""
        child = copy.copy(self)
        child.reading, child._pairs = self.reading.for_tile(tile), None
        return child

    def fill(self, node: Any, name: str = "", depth: int = 0, null_ok: bool = False) -> Any:
        """A value for ``node`` (the field ``name``) that fits its grammar."""
        node = self.schema.resolve(node)
        if "const" in node:
            return node["const"]
        offered = self.schema.variants(node)
        if offered is not None:
            return self._variant(offered[0], offered[1] or null_ok, name, depth)
        what, null_ok = kind(node), null_ok or nullable(node)
        members = node.get("enum")
        if isinstance(members, list) and members:
            return self._member(members, node, name)
        if what == "object":
            props = node.get("properties") or {}
            return {key: self.fill(sub, key, depth + 1) for key, sub in props.items()} if depth < _DEPTH else {}
        if what == "array":
            return self._array(node, name, depth) if depth < _DEPTH else []
        if what == "boolean":
            return self.reading.read
        if what in ("integer", "number"):
            return self._number(node, name, what == "integer", null_ok)
        if what == "string":
            return self._string(node, name, null_ok)
        return None

    def answer_mixture(self, node: Any, name: str, null_ok: bool = False) -> list[tuple[Any, float]] | None:
        """Each value the answer field ``name`` could have held, with its share (rule 8); None for another field.

        An open question's declining is the value it writes then (``""`` or null).
        """
        node = self.schema.resolve(node)
        offered = self.schema.variants(node)
        if offered is not None:
            return self.answer_mixture(offered[0][0], name, offered[1] or null_ok) if offered[0] else None
        reading, n, null_ok = self.reading, len(self.reading.choices), null_ok or nullable(node)
        if "const" in node:
            return None
        members = node.get("enum")
        if isinstance(members, list) and members:
            chosen = self._answer_member(members)
            return list(zip(members, reading.choice_shares(), strict=True)) if chosen is not None else None
        bounds = (node.get("minimum"), node.get("maximum"))
        if kind(node) == "integer" and reading.index is not None and n >= 2 and bounds in ((0, n - 1), (1, n)):
            return [(c + int(bounds[0]), share) for c, share in enumerate(reading.choice_shares())]
        if kind(node) != "string" or not name or name != self.answer_field:
            return None
        if reading.choices:
            return [(_text(c, node), share) for c, share in zip(reading.choices, reading.choice_shares(), strict=True)]
        declined = None if null_ok else _text("", node)
        return [(declined if v is None else _text(v, node), share) for v, share in reading.open_shares()]

    def _string(self, node: dict[str, Any], name: str, null_ok: bool) -> str | None:
        if name and name == self.answer_field:
            return None if null_ok and not self.reading.answer else _text(self.reading.answer, node)
        found = self._labelled(node, name)
        if found is not None:
            return str(found)
        return None if null_ok else _text(self.reading.account(), node)

    def _number(self, node: dict[str, Any], name: str, integer: bool, null_ok: bool) -> float | int | None:
        index, n = self.reading.index, len(self.reading.choices)
        if integer and index is not None and n >= 2:
            bounds = (node.get("minimum"), node.get("maximum"))
            if bounds in ((0, n - 1), (1, n)):
                return index + int(bounds[0])
        found = self._labelled(node, name)
        if isinstance(found, int | float):
            return found
        return None if null_ok else least_number(node, integer)

    def _member(self, members: list[Any], node: dict[str, Any], name: str) -> Any:
        answered = self._answer_member(members)
        if answered is not None:
            return answered
        if all(_is_int(m) for m in members):
            return next((i for i in self.reading.ids() if i in members), members[0])
        found = self._labelled(node, name)
        if found is not None:
            return found
        if node.get("default") in members:  # the schema's own neutral value: nothing read says otherwise
            return node["default"]
        return members[self.reading.choose([str(m) for m in members])]

    def _answer_member(self, members: list[Any]) -> Any:
        """The member that stands for the answer when the enum holds the choices, their letters or indices."""
        index, choices = self.reading.index, self.reading.choices
        if index is None or len(choices) < 2 or len(members) != len(choices):
            return None
        named = [tokens(str(m)) for m in members] == [tokens(c) for c in choices]
        lettered = [str(m).upper() for m in members] == [chr(ord("A") + i) for i in range(len(choices))]
        first = members[0]
        numbered = _is_int(first) and first in (0, 1) and members == list(range(first, first + len(choices)))
        return members[index] if named or lettered or numbered else None

    def _variant(self, options: list[dict[str, Any]], null_ok: bool, name: str, depth: int) -> Any:
        if not options:
            return None
        key = self.schema.discriminator(options)
        if key is None:
            return self.fill(options[0], name, depth + 1, null_ok)
        tags = [str(tag_of(self.schema.resolve(o["properties"][key]), "")) for o in options]
        pick = self.reading.choose(tags, [str(o.get("description") or "") for o in options])
        return self.fill(options[pick], name, depth + 1)

    def _array(self, node: dict[str, Any], name: str, depth: int) -> list[Any]:
        least, most = items_bounds(node)
        item = self.schema.resolve(node.get("items"))
        what, members = kind(item), item.get("enum")
        if self.schema.variants(item) is None and what == "object" and not members:
            values = [self.for_tile(tile).fill(item, name, depth + 1) for tile in self._tiles_for(item)][:most]
            return values + [self.fill(item, name, depth + 1) for _ in range(least - len(values))]
        spare: list[Any]
        if isinstance(members, list) and members:
            answered = self._answer_member(members)
            values = [answered] if answered is not None else [i for i in self.reading.ids() if i in members]
            spare = list(members)
        elif what == "integer":
            values = [i for i in self.reading.ids() if _is_int(i) and number_in(float(i), item, True) is not None]
            start = int(least_number(item, True))
            spare = [v for v in range(start, start + least + len(values)) if number_in(v, item, True) is not None]
        elif what == "string":
            values = [_text(item_read.text, item) for item_read in self.reading.ranked()]
            spare = [_text("", item)]
        else:
            values, spare = [], [self.fill(item, name, depth + 1)]
        values = list(dict.fromkeys(values))[:most]
        unused = [v for v in spare if v not in values]
        while len(values) < least:  # distinct padding while there is some, then the last repeated
            values.append(unused.pop(0) if unused else spare[-1])
        return values

    def _tiles_for(self, item: dict[str, Any]) -> list[Tile]:
        """The tiles bearing on the question whose id every integer enum of ``item`` admits."""
        fences: list[list[Any]] = []
        for sub in (item.get("properties") or {}).values():
            members = self.schema.resolve(sub).get("enum")
            if isinstance(members, list) and members and all(_is_int(m) for m in members):
                fences += [members] if self._answer_member(members) is None else []
        return [t for t in self.reading.bearing_tiles() if all(Item("", t).id in f for f in fences)]

    def _labelled(self, node: dict[str, Any], name: str) -> Any:
        """The value printed with the label closest in meaning to the field, typed by its schema; None if none."""
        if self._pairs is None:
            self._pairs = pairs_of(self.reading.items)
        if not name or not self._pairs:
            return None
        fit = similarity([phrase(name, str(node.get("description") or ""))], [p.label for p in self._pairs])[0]
        for j in np.argsort(-fit, kind="stable"):
            if fit[j] < FITS:
                break
            value = _typed(self._pairs[j].value, node)
            if value is not None:
                return value
        return None


def fill(reading: Reading, schema: dict[str, Any]) -> Any:
    """Rule 6: a value for ``schema``, from what ``reading`` holds."""
    return Filler(reading, schema).fill(schema)


def _answer_field(schema: Schema) -> str | None:
    """The string field closest in meaning to :data:`ANSWER_ANCHOR`, when it comes close enough."""
    fields: dict[str, str] = {}
    for node in _objects(schema.root):
        for key, sub in (node.get("properties") or {}).items():
            resolved = schema.resolve(sub)
            offered = schema.variants(resolved)
            plain = [resolved] if offered is None else offered[0]
            if any(kind(p) == "string" and "enum" not in p and "const" not in p for p in plain):
                fields.setdefault(key, str(resolved.get("description") or ""))
    if not fields:
        return None
    fit = similarity([ANSWER_ANCHOR], [phrase(k, d) for k, d in fields.items()])[0]
    best = int(np.argmax(fit))
    return list(fields)[best] if fit[best] >= ANSWER_FITS else None


def _objects(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from _objects(value)


def _typed(text: str, node: dict[str, Any]) -> Any:
    """A value read, as the field's schema types it (None when it cannot be)."""
    members = node.get("enum")
    if isinstance(members, list):
        return next((m for m in members if tokens(str(m)) == tokens(text)), None)
    what = kind(node)
    if what in ("integer", "number"):
        number = _NUMBER.fullmatch(text.replace(",", "").strip())
        return number_in(float(number.group(0)), node, what == "integer") if number else None
    return string_in(text, node) if what == "string" else None


def _text(text: str, node: dict[str, Any]) -> str:
    """``text`` within the field's length bounds and pattern (else "", else what the bounds make of "")."""
    return string_in(text, node) or string_in("", node) or ""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
