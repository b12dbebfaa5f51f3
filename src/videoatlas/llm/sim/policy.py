"""How the stand-in VLM decides: fill any JSON schema from what it read, matched against the request.

The stand-in understands a request the way a small model would: it finds the question and the
answer choices in the text, takes the question's salient words (capitalised names, quoted
phrases) as what to look for, and reads the images (:mod:`.perception`). A tile whose text holds
a choice is *evidence*; a tile whose text holds a salient word is an *anchor* worth a closer look.

It then fills the requested schema field by field, guided by field names the way a model reads
them: ``action`` enums, cell ids, answers, booleans of sufficiency, directions, descriptions,
confidences and times. Fields it has no opinion on get the simplest valid value. Nothing here
reads files, ground truth or anything but the request.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from videoatlas.llm.sim.perception import Sight, Tile

_CHOICE_LINE = re.compile(r"^\s*(?:[-*]\s*)?\(?([A-Ja-j]|\d{1,2})\)?[.):]\s+(.+?)\s*$")
_QUESTION_LINE = re.compile(r"(?:question|query)\s*[:=]\s*[\"“]?(.+?)[\"”]?\s*$", re.IGNORECASE)
_STOP = {
    "THE",
    "AND",
    "WHICH",
    "WHAT",
    "WHEN",
    "WHERE",
    "WHO",
    "HOW",
    "MANY",
    "DOES",
    "VIDEO",
    "SHOWN",
    "APPEAR",
    "APPEARS",
    "FIRST",
    "AFTER",
    "BEFORE",
    "RIGHT",
    "DURING",
    "CHAPTER",
    "CODE",
    "WORD",
    "TIMES",
    "CARD",
}
# How far "right after (before)" reaches, in seconds of video.
ANCHOR_REACH_S = 6.0
# Sightings of a counted thing closer than this are the same appearance.
SAME_APPEARANCE_S = 6.0
# Share of the video (percent, as progress lines print it) that must be searched before a count is final.
COUNT_COVERAGE_PCT = 99.0
_COUNT_WORDS = ("how many", "number of", "count")
_ORDER_WORDS = ("first", "earlier", "before the other", "which comes", "order")


def norm(text: str) -> str:
    """Upper-case letters and digits only: how the stand-in compares what it read with words asked."""
    return re.sub(r"[^A-Z0-9]", "", text.upper())


@dataclass(slots=True)
class Request:
    """What the stand-in understood of a request."""

    text: str
    sights: list[Sight]
    question: str
    choices: list[str]
    keywords: list[str]
    counting: bool = False
    ordering: bool = False
    direction: str | None = None
    tiles: list[Tile] = field(default_factory=list)

    @classmethod
    def understand(cls, texts: list[str], sights: list[Sight]) -> Request:
        """Find the question, choices and salient words in the request's text."""
        text = "\n".join(texts)
        question = _find_question(text)
        choices = _find_choices(text)
        keywords = _keywords(question, choices)
        q = question.lower()
        direction = "after" if " after " in f" {q} " else ("before" if " before " in f" {q} " else None)
        tiles = [t for s in sights for t in s.tiles]
        return cls(
            text=text,
            sights=sights,
            question=question,
            choices=choices,
            keywords=keywords,
            counting=any(w in q for w in _COUNT_WORDS),
            ordering=any(w in q for w in _ORDER_WORDS) and len(choices) == 2,
            direction=direction,
            tiles=tiles,
        )

    # -- what the tiles show -------------------------------------------------------------------

    def choices_in(self, tile: Tile) -> list[int]:
        """Indices of choices whose text the tile shows (choices too short to be distinctive excluded)."""
        seen = norm(tile.text)
        return [i for i, c in enumerate(self.choices) if len(norm(c)) >= 3 and norm(c) in seen]

    def keywords_in(self, tile: Tile) -> list[str]:
        """Salient words the tile shows."""
        seen = norm(tile.text)
        return [k for k in self.keywords if norm(k) and norm(k) in seen]

    def is_evidence(self, tile: Tile) -> bool:
        """Whether the tile holds what would answer the question."""
        if tile.explored:
            return False
        if self.counting or not self.choices:
            return bool(self.keywords_in(tile))
        if not self.choices_in(tile):
            return False
        if self.direction is not None:
            return self.next_to_anchor(tile)
        # A choice shown outside the context the question names (another chapter's code) is a distractor.
        return not self.keywords or bool(self.keywords_in(tile))

    def in_time_order(self, tile: Tile) -> tuple[list[Tile], int] | None:
        """The grid cells of the image that shows ``tile``, in time order, and the tile's place among them."""
        for sight in self.sights:
            cells = sorted((t for t in sight.tiles if t.cell is not None and t.time is not None), key=_tile_time)
            at = next((i for i, t in enumerate(cells) if t is tile), None)
            if at is not None:
                return cells, at
        return None

    def next_to_anchor(self, tile: Tile) -> bool:
        """For "what comes after (before) X": a choice counts only right after (before) X.

        That is, when walking from the tile towards X through the same grid, X is met within
        ``ANCHOR_REACH_S`` seconds before any other choice is (frames showing neither are skipped), or
        when the view itself was opened right after (before) X by INVESTIGATE and this is the first
        (last) choice in it. The same words shown elsewhere in the video are decoys. Scratchpad tiles
        were vetted when they were collected.
        """
        if tile.cell is None or tile.time is None:
            return True
        placed = self.in_time_order(tile)
        if placed is None:
            return False
        cells, at = placed
        towards = reversed(cells[:at]) if self.direction == "after" else iter(cells[at + 1 :])
        for other in towards:
            if abs(_tile_time(other) - tile.time) > ANCHOR_REACH_S or self.choices_in(other):
                break
            if self.keywords_in(other):
                return True
        if f"looked {self.direction} cell" in self.text.lower():
            shown = [t for t in cells if self.choices_in(t)]
            return (shown[0] if self.direction == "after" else shown[-1]) is tile
        return False

    def continues_appearance(self, tile: Tile) -> bool:
        """Whether the frame just before this one in its grid shows the same counted thing.

        One appearance spans consecutive frames; it is counted at its first.
        """
        placed = self.in_time_order(tile)
        if placed is None:
            return False
        cells, at = placed
        return at > 0 and bool(set(self.keywords_in(cells[at - 1])) & set(self.keywords_in(tile)))

    def is_anchor(self, tile: Tile) -> bool:
        """Whether the tile shows a salient word of the question (worth expanding or investigating)."""
        return not tile.explored and bool(self.keywords_in(tile))

    def already_noted(self, tile: Tile) -> bool:
        """Whether the request already records this tile's evidence.

        Evidence lines in our prompts carry a time (``@118.8 s``). For counting, a tile is noted when
        a collected line mentions the counted thing within a few seconds (the same appearance); for
        other questions, when its time is already listed, or two collected lines already show the
        same choice (more copies of one answer add nothing).
        """
        if tile.time is None:
            return False
        if self.counting or not self.choices:
            times = [t for mark in self.keywords_in(tile) for t in self.noted_times(norm(mark))]
            return any(abs(t - tile.time) < SAME_APPEARANCE_S for t in times)
        for i in self.choices_in(tile):
            times = self.noted_times(norm(self.choices[i]))
            if len(times) >= 2 or any(abs(t - tile.time) <= 0.06 for t in times):
                return True
        return False

    def noted_times(self, mark: str) -> list[float]:
        """Times of evidence lines (``@12.3 s``) in the request that mention ``mark``."""
        times = []
        for line in self.text.splitlines():
            stamp = re.search(r"@\s*(\d+(?:\.\d+)?)\s*s", line)
            if stamp and mark in norm(line):
                times.append(float(stamp.group(1)))
        return times

    def relevance(self, tile: Tile) -> int:
        """How much a tile matters to the question.

        A choice shown with a salient word beats a salient word alone, which beats a choice alone
        (a same-looking distractor elsewhere), which beats nothing.
        """
        if tile.explored:
            return 0
        has_choice = bool(self.choices_in(tile)) if self.choices and not self.counting else False
        has_word = bool(self.keywords_in(tile))
        return 7 * (has_choice and has_word) + 3 * (has_word and not has_choice) + 2 * (has_choice and not has_word)

    def grid_tiles(self) -> list[Tile]:
        """Cell tiles of the images, unexplored ones first in reading order."""
        return [t for t in self.tiles if t.cell is not None]


def _tile_time(tile: Tile) -> float:
    return tile.time if tile.time is not None else 0.0


def _find_question(text: str) -> str:
    for line in text.splitlines():
        match = _QUESTION_LINE.search(line)
        if match and len(match.group(1)) > 8:
            return match.group(1).strip()
    candidates = [ln.strip() for ln in text.splitlines() if "?" in ln]
    return candidates[0] if candidates else ""


def _find_choices(text: str) -> list[str]:
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in text.splitlines():
        match = _CHOICE_LINE.match(line)
        if match:
            current.append(match.group(2).strip().strip('"'))
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    good = [b for b in blocks if len(b) >= 2]
    return good[0] if good else []


def _keywords(question: str, choices: list[str]) -> list[str]:
    quoted = re.findall(r"[\"'“‘]([^\"'”’]{2,40})[\"'”’]", question)
    caps = [w for w in re.findall(r"\b[A-Z][A-Z0-9-]{2,}\b", question) if w not in _STOP]
    words = quoted + caps
    if not words:  # fall back to longer content words of the question
        words = [w for w in re.findall(r"[A-Za-z]{5,}", question) if w.upper() not in _STOP][:3]
    seen: list[str] = []
    for w in words:
        if w not in seen:
            seen.append(w)
    return seen


# -- filling a schema ------------------------------------------------------------------------------


class Filler:
    """Builds a schema-valid JSON value, choosing field values from a :class:`Request`."""

    def __init__(self, request: Request, schema: dict[str, Any], seed: int = 0) -> None:
        self.req = request
        self.root = schema
        self.seed = seed
        self.focus: Tile | None = None

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        """Follow ``$ref`` into ``$defs``."""
        while "$ref" in node:
            name = node["$ref"].split("/")[-1]
            node = self.root.get("$defs", {}).get(name) or self.root.get("definitions", {}).get(name, {})
        return node

    def value(self, node: dict[str, Any], name: str = "") -> Any:
        """A valid value for ``node``, chosen with the field ``name`` in mind."""
        node = self.resolve(node)
        if "const" in node:
            return node["const"]
        for key in ("anyOf", "oneOf"):
            if key in node:
                options = [self.resolve(o) for o in node[key]]
                non_null = [o for o in options if o.get("type") != "null"]
                preferred = self._pick_option(non_null, name)
                if preferred is None:
                    return None
                return self.value(preferred, name)
        if node.get("allOf"):
            return self.value(node["allOf"][0], name)
        if "enum" in node:
            return self.enum(node["enum"], name)
        kind = node.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind == "object" or "properties" in node:
            return self.obj(node)
        if kind == "array":
            return self.array(node, name)
        if kind == "integer":
            return self.integer(node, name)
        if kind == "number":
            return self.number(node, name)
        if kind == "boolean":
            return self.boolean(name)
        if kind == "string":
            return self.string(node, name)
        return None

    def _pick_option(self, options: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
        if not options:
            return None
        if re.search(r"cell", name) and self._ranked_cells():
            ints = [o for o in options if o.get("type") == "integer"]
            if ints:
                return ints[0]
        return options[0]

    # -- composite ---------------------------------------------------------------------------------

    def obj(self, node: dict[str, Any]) -> dict[str, Any]:
        """An object: the action first (other fields follow it), then the required fields."""
        props: dict[str, Any] = node.get("properties", {})
        required = set(node.get("required", props.keys()))
        out: dict[str, Any] = {}
        order = sorted(props, key=lambda k: (k != "action", k))  # decide the action first
        for key in order:
            if key in required or key in ("cell", "cells", "direction"):
                out[key] = self.value(props[key], key)
        if "action" in out:
            out = self._fit_action(out, props)
        return out

    def array(self, node: dict[str, Any], name: str) -> list[Any]:
        """An array: cell ids ranked by relevance, one object per evidence tile, or the minimum."""
        lo = int(node.get("minItems", 0))
        hi = int(node.get("maxItems", max(lo, 8)))
        items = self.resolve(node.get("items", {}))
        if re.search(r"erase|drop|remove|explore|suggest", name):
            return [self.value(items, name) for _ in range(lo)]  # a small model rarely volunteers these
        if items.get("type") == "integer" or (_is_id_field(name) and not items.get("properties")):
            ids = self.cell_ids(lo, hi, items)
            return ids
        if items.get("type") == "object" or "properties" in items:
            focus_tiles = self.new_evidence()[: min(hi, 3)] if re.search(r"item|evidence|find|add", name) else []
            if re.search(r"erase|drop|remove|explore|suggest", name):
                focus_tiles = []
            out = []
            for tile in focus_tiles:
                self.focus = tile
                out.append(self.value(items, name))
            self.focus = None
            while len(out) < lo:
                out.append(self.value(items, name))
            return out[:hi]
        if items.get("type") == "string" and re.search(r"evidence|label|cite", name):
            return self.cited_labels()[:hi]
        return [self.value(items, name) for _ in range(lo)]

    # -- scalars ----------------------------------------------------------------------------------

    def enum(self, values: list[Any], name: str) -> Any:
        """An enum value: actions, directions, traversal modes and answers by their meaning."""
        upper = [str(v).upper() for v in values]
        if name == "action" or any(v in upper for v in ("EXPAND", "FINISHED", "ADD_TO_SCRATCHPAD")):
            return values[upper.index(self.choose_action(upper))]
        if re.search(r"direction", name) or set(upper) <= {"BEFORE", "AFTER"}:
            want = (self.req.direction or "after").upper()
            return values[upper.index(want)] if want in upper else values[0]
        if re.search(r"traversal|strategy|mode", name) or set(upper) <= {"BFS", "DFS", "AUTO"}:
            want = "BFS" if (self.req.counting or self.req.ordering) else "DFS"
            return values[upper.index(want)] if want in upper else values[0]
        if re.search(r"answer|choice", name):
            idx = self.answer_index()
            if idx is not None:
                for candidate in (self.req.choices[idx], chr(ord("A") + idx), str(idx)):
                    if candidate in values:
                        return candidate
            return values[0]
        if re.search(r"verdict|status|support", name):
            return values[0]
        return values[0]

    def integer(self, node: dict[str, Any], name: str) -> int:
        """An integer: an answer index, a cell id or a count, clamped to the schema's bounds."""
        lo = node.get("minimum", node.get("exclusiveMinimum", -1) + 1 if "exclusiveMinimum" in node else None)
        hi = node.get("maximum", node.get("exclusiveMaximum", 1) - 1 if "exclusiveMaximum" in node else None)
        value: int | None = None
        if re.search(r"answer|choice", name):
            value = self.answer_index()
            if value is None:
                value = self._guess(len(self.req.choices) or 1)
        elif _is_id_field(name):
            if self.focus is not None and self.focus.cell is not None:
                value = self.focus.cell
            else:
                ranked = self._ranked_cells()
                value = ranked[0] if ranked else None
        elif re.search(r"count|number", name):
            value = len(self.evidence_tiles())
        if value is None:
            value = int(lo) if lo is not None else 0
        if lo is not None:
            value = max(int(lo), value)
        if hi is not None:
            value = min(int(hi), value)
        return value

    def number(self, node: dict[str, Any], name: str) -> float:
        """A number: a confidence or a time, clamped to the schema's bounds."""
        lo = node.get("minimum")
        hi = node.get("maximum")
        value = 0.0
        if re.search(r"confidence|score|prob", name):
            value = 0.9 if self.focus is not None and self.req.is_evidence(self.focus) else 0.5
        elif re.search(r"time|timestamp|start|end|at", name):
            evidence = self.evidence_tiles()
            tile = self.focus or (evidence[0] if evidence else None)
            value = float(tile.time) if tile is not None and tile.time is not None else 0.0
        if lo is not None:
            value = max(float(lo), value)
        if hi is not None:
            value = min(float(hi), value)
        return value

    def boolean(self, name: str) -> bool:
        """A boolean: sufficiency of the evidence, else false."""
        if re.search(r"sufficient|enough|done|complete|found", name):
            return self.sufficient()
        return False

    def string(self, node: dict[str, Any], name: str) -> str:
        """A string: a search task, a description of the focused tile, an answer or a summary."""
        if re.search(r"task", name):
            looks = ", ".join(self.req.keywords) or "the moment the question asks about"
            options = "; ".join(self.req.choices)
            text = f"Find {looks} on screen and read what is shown there" + (
                f"; candidates: {options}" if options else ""
            )
        elif self.focus is not None:
            text = self.describe(self.focus)
        elif re.search(r"answer", name):
            idx = self.answer_index()
            text = self.req.choices[idx] if idx is not None else self.open_answer()
        elif re.search(r"summary|reason|descr|note|why|explan", name):
            text = self.overview()
        else:
            text = ""
        max_len = node.get("maxLength")
        return text[: int(max_len)] if max_len else text

    # -- judgement -------------------------------------------------------------------------------

    def evidence_tiles(self) -> list[Tile]:
        """Tiles that hold what would answer the question."""
        return [t for t in self.req.tiles if self.req.is_evidence(t)]

    def new_evidence(self) -> list[Tile]:
        """Evidence cells not yet recorded in the request's text, the most relevant kind only."""
        fresh = [t for t in self.evidence_tiles() if t.cell is not None and not self.req.already_noted(t)]
        if self.req.counting:
            fresh = [t for t in fresh if not self.req.continues_appearance(t)]
        best = max((self.req.relevance(t) for t in fresh), default=0)
        return [t for t in fresh if self.req.relevance(t) == best or (self.req.counting or not self.req.choices)]

    def _ranked_cells(self) -> list[int]:
        tiles = [t for t in self.req.grid_tiles() if not t.explored and t.cell is not None]
        ranked = sorted(tiles, key=lambda t: -self.req.relevance(t))  # stable: reading order within a rank
        return [t.cell for t in ranked if t.cell is not None]

    def cell_ids(self, lo: int, hi: int, items: dict[str, Any]) -> list[int]:
        """Between ``lo`` and ``hi`` cell ids, most relevant first."""
        ranked = self._ranked_cells()
        useful = [c for c in ranked if any(t.cell == c and self.req.relevance(t) > 0 for t in self.req.tiles)]
        count = max(lo, min(hi, len(useful))) if useful else lo
        chosen = ranked[:count]
        mx = items.get("maximum")
        mn = int(items.get("minimum", 0))
        valid = [c for c in chosen if (mx is None or c <= mx) and c >= mn]
        filler = mn
        while len(valid) < lo:  # nothing seen to justify more: fill the minimum with the first free ids
            if filler not in valid:
                valid.append(filler)
            filler += 1
        return valid[:hi]

    def choose_action(self, allowed: list[str]) -> str:
        """The action a careful small model would take given what it sees."""

        def pick(*names: str) -> str | None:
            return next((n for n in names if n in allowed), None)

        fresh = self.new_evidence()
        if fresh and (add := pick("ADD_TO_SCRATCHPAD", "ADD")):
            return add
        anchors = [t for t in self.req.grid_tiles() if self.req.is_anchor(t) and not self.req.is_evidence(t)]
        if anchors and self.req.direction and "INVESTIGATE" in allowed and "INVESTIGATE" not in self.req.text.upper():
            return "INVESTIGATE"
        if anchors and not self.evidence_tiles():
            if (mark := pick("MARK_PROMISING")) is not None:
                return mark
            if (expand := pick("EXPAND")) is not None:
                return expand
        return pick("FINISHED", "BACKTRACK") or allowed[0]

    def _fit_action(self, out: dict[str, Any], props: dict[str, Any]) -> dict[str, Any]:
        """Point the chosen action at the right cells."""
        action = str(out["action"]).upper()
        if action.startswith("ADD"):
            targets = [t.cell for t in self.new_evidence() if t.cell is not None]
        elif action in ("EXPAND", "INVESTIGATE", "ZOOM", "MARK_PROMISING"):
            targets = [t.cell for t in self.req.grid_tiles() if self.req.is_anchor(t) and t.cell is not None]
        else:
            targets = []
        if targets:
            if "cell" in props:
                out["cell"] = targets[0]
            if "cells" in props:
                node = self.resolve(props["cells"])
                out["cells"] = targets[: int(node.get("maxItems", len(targets)))]
        return out

    def answer_index(self) -> int | None:
        """The best-supported choice, or None when nothing seen supports any."""
        choices = self.req.choices
        if not choices:
            return None
        texts = self._evidence_texts()
        if self.req.counting:
            seen = sorted(t for t, txt in texts if any(norm(k) in norm(txt) for k in self.req.keywords))
            # Sightings closer than SAME_APPEARANCE_S are one appearance seen in several frames.
            count = sum(1 for i, t in enumerate(seen) if i == 0 or t - seen[i - 1] > SAME_APPEARANCE_S)
            numeric = [(i, int(c)) for i, c in enumerate(choices) if c.strip().isdigit()]
            if numeric and count:
                return min(numeric, key=lambda p: (abs(p[1] - count), p[1]))[0]
            return None
        support: dict[int, list[float]] = {}
        for t, txt in texts:
            for i, choice in enumerate(choices):
                if len(norm(choice)) >= 3 and norm(choice) in norm(txt):
                    support.setdefault(i, []).append(t)
        if not support:
            return None
        if self.req.ordering:
            return min(support, key=lambda i: (min(support[i]), i))
        return max(support, key=lambda i: (len(support[i]), -i))

    def _evidence_texts(self) -> list[tuple[float, str]]:
        """(time, text) of labelled evidence tiles and timestamped evidence lines.

        Grid cells count only when there is no labelled evidence at all (the overview is then all
        there is).
        """
        labelled = [(t.time or 0.0, t.text) for t in self.req.tiles if t.evidence is not None]
        items = labelled or [(t.time or 0.0, t.text) for t in self.req.tiles if t.cell is not None]
        for line in self.req.text.splitlines():
            match = re.search(r"(?:@|at\s)\s*(\d+(?:\.\d+)?)\s*s", line)
            if match:
                items.append((float(match.group(1)), line))
        return items

    def cited_labels(self) -> list[str]:
        """Labels of evidence tiles that show the chosen answer (or any evidence, for open questions)."""
        idx = self.answer_index()
        out = []
        for tile in self.req.tiles:
            if tile.evidence is None:
                continue
            shows = norm(tile.text)
            if idx is None or norm(self.req.choices[idx]) in shows:
                out.append(tile.evidence)
        return out

    def sufficient(self) -> bool:
        """Whether the evidence seen settles the question."""
        if not self.req.choices:
            return bool(self.evidence_tiles())
        idx = self.answer_index()
        if idx is None:
            return False
        if self.req.counting:
            # A count is settled only once the whole video was searched: any part left out may hold one more.
            progress = re.search(r"(\d+(?:\.\d+)?)\s*%\s*(?:of the video\s*)?(?:explored|covered)", self.req.text)
            return progress is not None and float(progress.group(1)) >= COUNT_COVERAGE_PCT
        if self.req.ordering:
            texts = " ".join(txt for _, txt in self._evidence_texts())
            return all(norm(c) in norm(texts) for c in self.req.choices)
        return True

    def describe(self, tile: Tile) -> str:
        """One sentence on what a tile shows."""
        where = f"cell {tile.cell}" if tile.cell is not None else f"item {tile.evidence}"
        when = f" at {tile.time:.1f} s" if tile.time is not None else ""
        shown = tile.text or "nothing legible"
        return f"{where}{when} shows: {shown}"

    def overview(self) -> str:
        """One sentence on what the images show that matters to the question."""
        ev = self.evidence_tiles()
        if ev:
            return "; ".join(self.describe(t) for t in ev[:4])
        anchors = [t for t in self.req.tiles if self.req.is_anchor(t)]
        if anchors:
            return "related scenes: " + "; ".join(self.describe(t) for t in anchors[:3])
        return "nothing related to the question is visible here"

    def open_answer(self) -> str:
        """A free-text answer from the evidence, for questions without choices."""
        ev = self.evidence_tiles()
        if not ev:
            return "I could not find the answer in what I saw."
        return "Seen: " + "; ".join(self.describe(t) for t in ev[:3])

    def _guess(self, n: int) -> int:
        """A deterministic guess (the stand-in's own; the agent never guesses)."""
        digest = hashlib.sha256(f"{self.seed}:{self.req.question}".encode()).digest()
        return digest[0] % max(1, n)


def _is_id_field(name: str) -> bool:
    """Field names that hold cell ids (whole words: ``cell``, ``cells``, ``id``, ``cell_ids``, ``top``)."""
    return any(part in ("cell", "cells", "id", "ids", "top") for part in re.split(r"[_\W]+", name.lower()))


def respond(schema: dict[str, Any] | None, request: Request, seed: int = 0) -> Any:
    """The stand-in's reply: a value valid for ``schema``, or free text when there is no schema."""
    filler = Filler(request, schema or {}, seed)
    if schema is None:
        idx = filler.answer_index()
        return request.choices[idx] if idx is not None else filler.open_answer()
    return filler.value(schema)
