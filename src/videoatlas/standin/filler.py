"""Filling a reply schema from what the stand-in understood (:class:`.policy.Request`).

Every field is filled by what its name and type mean in ordinary usage: an enum of actions by
what each value does (its words, or the description the request gives of it), ids by relevance,
an answer by the evidence, a count by the appearances seen, a boolean of sufficiency by whether
the evidence settles the question, a description by what was read (and what could not be).
Fields it has no opinion on get the simplest valid value.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import statistics
from typing import Any

from videoatlas.standin.language import clock_times, intent_of, norm, searched_share, stated_limit, words_of
from videoatlas.standin.perception import Tile
from videoatlas.standin.policy import COUNT_COVERAGE_PCT, IMMEDIATE_S, SAME_SPAN_S, Request, Sighting

COVERED_S = 2.5
"""Seconds between reports below which a stretch counts as seen (text-only planning then looks elsewhere)."""
_UNREAD = re.compile(r"too small|blurr|illegible|unreadable|can(?:no|')t (?:be )?read", re.IGNORECASE)
"""What a report says of text it saw but could not make out."""
_ANSWER = {"answer", "choice", "option", "selection", "selected", "pick"}
_IDS = {"cell", "cells", "id", "ids", "tile", "tiles", "index", "indices", "top"}
_COUNT = {"count", "number", "total", "quantity", "many", "occurrences"}
_TEXT = {"summary", "reason", "reasoning", "description", "describe", "note", "notes", "why", "explanation", "text"}
_TEXT |= {"rationale", "caption", "observation", "observations", "content", "thought", "analysis", "comment"}
_TASK = {"task", "plan", "query", "search", "target"}
_SUFFICIENT = {"sufficient", "enough", "done", "complete", "answerable", "settled", "conclusive"}
_PRESENT = {"found", "visible", "present", "contains", "seen", "shown", "exists"}
_LEAVE_OUT = {"erase", "drop", "remove", "discard", "delete", "forget", "ignore"}
_SUGGEST = {"explore", "suggest", "suggestions", "next", "revisit", "later"}
_CONFIDENCE = {"confidence", "score", "probability", "prob", "certainty", "likelihood"}
_TIME = {"time", "timestamp", "start", "end", "second", "seconds", "at", "when", "moment"}
_CITE = {"evidence", "labels", "label", "cite", "cites", "cited", "citations", "references", "sources"}


def _named(name: str, vocabulary: set[str]) -> bool:
    return bool(vocabulary & set(words_of(name)))


class Filler:
    """Builds a schema-valid JSON value, choosing field values from a :class:`Request`."""

    def __init__(self, request: Request, schema: dict[str, Any], seed: int = 0) -> None:
        self.req = request
        self.root = schema
        self.seed = seed
        self.focus: Tile | None = None
        self.per_choice: int | None = None
        self.intent: str | None = None
        self.span: tuple[float, float] | None = None
        """The stretch of video the chosen action looks at, when it was chosen from what the text reports."""
        self._evidence: list[Tile] | None = None
        self._depth = 0

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        """Follow ``$ref`` into ``$defs`` (a cycle of references resolves to an empty schema)."""
        for _ in range(16):
            if "$ref" not in node:
                return node
            name = node["$ref"].split("/")[-1]
            node = self.root.get("$defs", {}).get(name) or self.root.get("definitions", {}).get(name, {})
        return {}

    def value(self, node: dict[str, Any], name: str = "") -> Any:
        """A valid value for ``node``, chosen with the field ``name`` in mind."""
        self._depth += 1
        try:
            if self._depth > 24:  # a schema that refers to itself: stop with the smallest value
                return _smallest(self.resolve(node))
            return self._value(node, name)
        finally:
            self._depth -= 1

    def _value(self, node: dict[str, Any], name: str) -> Any:
        node = self.resolve(node)
        if "const" in node:
            return node["const"]
        for key in ("anyOf", "oneOf"):
            if key in node:
                options = [self.resolve(o) for o in node[key]]
                picked = self._pick_option(options, name)
                return None if picked is None else self.value(picked, name)
        if node.get("allOf"):
            return self.value(node["allOf"][0], name)
        if "enum" in node:
            return self.enum(list(node["enum"]), name)
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
        """A variant of a union: one whose ``action``-like constant matches the chosen intent, else the first."""
        non_null = [o for o in options if o.get("type") != "null"]
        if not non_null:
            return None
        tagged = [(o, self._tag(o)) for o in non_null]
        if any(tag is not None for _, tag in tagged):
            wanted = self.choose_action([tag for _, tag in tagged if tag is not None])
            self.intent = intent_of(wanted, self._described(wanted))  # the variant's other fields follow it
            return next(o for o, tag in tagged if tag == wanted)
        return non_null[0]

    def _tag(self, option: dict[str, Any]) -> str | None:
        """The constant an object variant is tagged with (a discriminated union's action), if any."""
        for prop in (option.get("properties") or {}).values():
            prop = self.resolve(prop)
            const = prop.get("const")
            if isinstance(const, str) and intent_of(const, self._described(const)) is not None:
                return const
        return None

    # -- composite ---------------------------------------------------------------------------------

    def obj(self, node: dict[str, Any]) -> dict[str, Any]:
        """An object: its action first (other fields follow it), then every field it has a value for."""
        props: dict[str, Any] = node.get("properties", {})
        required = set(node.get("required", props.keys()))
        out: dict[str, Any] = {}
        order = sorted(props, key=lambda k: (not self._is_action(props[k], k), k))
        for key in order:
            value = self.value(props[key], key)
            if value is not None or key in required:
                out[key] = value
        return {k: out[k] for k in props if k in out}

    def _is_action(self, node: dict[str, Any], name: str) -> bool:
        """An enum of things to do: most values mean a kind of step, of at least two kinds (not "before/after")."""
        node = self.resolve(node)
        values = [str(v) for v in node.get("enum") or ([node["const"]] if "const" in node else [])]
        if {"before", "after"} <= {v.lower() for v in values}:
            return False
        kinds = [intent_of(v) for v in values]
        known = [k for k in kinds if k is not None]
        return len(known) >= max(1, len(values) // 2) and (len(set(known)) >= 2 or len(values) == 1)

    def array(self, node: dict[str, Any], name: str) -> list[Any]:
        """An array: ids ranked by relevance, one object per choice or per sighting, labels cited, or the minimum."""
        items = self.resolve(node.get("items", {}))
        out = self._items(node, name)
        if node.get("uniqueItems"):
            out = [v for i, v in enumerate(out) if v not in out[:i]]
        if items.get("type") == "string":
            out = [self._fit_text(str(v), items) for v in out]
        lo = int(node.get("minItems", 0))
        pad = 0
        # Pad to the minimum as someone listing things does: with values not listed yet, as long as the
        # items allow new ones (an id list has no uniqueItems, which vLLM's backends cannot enforce),
        # then with the simplest value.
        while len(out) < lo and pad < 1000:
            extra = _distinct(items, pad)
            if extra not in out:
                out.append(extra)
            pad += 1
        out += [_smallest(items) for _ in range(lo - len(out))]
        return out[: int(node["maxItems"])] if "maxItems" in node else out

    def _items(self, node: dict[str, Any], name: str) -> list[Any]:
        lo = int(node.get("minItems", 0))
        hi = int(node.get("maxItems", max(lo, 16)))
        items = self.resolve(node.get("items", {}))
        if _named(name, _LEAVE_OUT):
            return [self.value(items, name) for _ in range(lo)]  # a careful model keeps what it has
        if items.get("type") == "integer" or (_named(name, _IDS) and not items.get("properties")):
            return self.cell_ids(lo, hi, items, suggest=_named(name, _SUGGEST))
        if items.get("type") == "object" or "properties" in items:
            return self._objects(items, name, lo, hi)
        if items.get("type") == "string" and _named(name, _CITE):
            listed = items.get("enum")
            return [label for label in self.cited_labels() if listed is None or label in listed][:hi]
        if items.get("type") == "string" and "enum" not in items and not _named(name, _SUGGEST):
            read = [t.text for t in self.req.tiles if t.text and not t.masked]
            out = read[:hi] if read else []
            return out + [self.value(items, name) for _ in range(max(0, lo - len(out)))]
        return [self.value(items, name) for _ in range(lo)]

    def _objects(self, items: dict[str, Any], name: str, lo: int, hi: int) -> list[Any]:
        props = items.get("properties") or {}
        out: list[Any] = []
        if any(_named(k, {"choice", "option"}) for k in props) and self.req.choices:
            for i in range(min(hi, len(self.req.choices))):
                self.per_choice = i
                out.append(self.value(items, name))
            self.per_choice = None
        elif _named(name, _SUGGEST):
            out = []  # places to look at next are cells (ranked elsewhere); a small model proposes no ranges
        else:
            with_ids = any(_named(k, _IDS) for k in props)
            # Items with ids are what an action records; with no action chosen, they describe what is shown.
            recording = self.intent in ("record", None) or not with_ids
            tiles = self.new_evidence() if with_ids and self.intent is not None else self._described_tiles()
            for tile in tiles[:hi] if recording else []:
                self.focus = tile
                out.append(self.value(items, name))
            self.focus = None
        while len(out) < lo:
            out.append(self.value(items, name))
        return out[:hi]

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

    # -- scalars ----------------------------------------------------------------------------------

    def enum(self, values: list[Any], name: str) -> Any:
        """An enum value by its meaning: ids, actions, directions, search modes, verdicts, answers."""
        if _named(name, _IDS) and values and all(isinstance(v, int) for v in values):
            return self.id_value(values)
        text = [str(v) for v in values]
        lower = [v.lower() for v in text]
        names_choices = bool(self.req.choices) and {norm(v) for v in text} == {norm(c) for c in self.req.choices}
        letters = [chr(ord("A") + i) for i in range(len(self.req.choices))]
        labels_choices = bool(self.req.choices) and [v.upper() for v in text] == letters
        if (_named(name, _ANSWER) or names_choices or labels_choices) and self.req.choices:
            return self._answer_value(values, text)
        if self._is_action({"enum": values}, name):
            chosen = self.choose_action(text)
            self.intent = intent_of(chosen, self._described(chosen))
            return values[text.index(chosen)]
        if {"before", "after"} <= set(lower):
            want = self.req.direction if self.intent == "around" and self.req.direction else None
            if want is None:
                want = next((v for v in ("none", "neither", "n/a") if v in lower), self.req.direction or "after")
            return values[lower.index(want)]
        if any("bfs" in v or "breadth" in v for v in lower) and any("dfs" in v or "depth" in v for v in lower):
            wide = self.req.counting or self.req.ordering is not None
            key = ("bfs", "breadth") if wide else ("dfs", "depth")
            return values[next(i for i, v in enumerate(lower) if any(k in v for k in key))]
        polarity = {v: _polarity(v) for v in lower}
        if "yes" in polarity.values() and "unknown" in polarity.values():
            return values[lower.index(self._verdict(polarity))]
        if not name:
            return self._answer_value(values, text)
        return values[0]

    def _answer_value(self, values: list[Any], text: list[str]) -> Any:
        """The enum value that names the best-supported choice (its text, its letter or its index)."""
        idx = self.answer_index()
        if idx is None:
            idx = self._guess(len(self.req.choices) or len(values))
        if self.req.choices and idx < len(self.req.choices):
            wanted = norm(self.req.choices[idx])
            for candidate in (wanted, chr(ord("A") + idx), str(idx)):
                hit = next((i for i, v in enumerate(text) if norm(v) == norm(candidate)), None)
                if hit is not None:
                    return values[hit]
        return values[min(idx, len(values) - 1)]

    def _verdict(self, polarity: dict[str, str]) -> str:
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

    def id_value(self, values: list[int]) -> int:
        """One id among ``values``: the tile in hand, else the chosen action's target, else the most relevant."""
        filed = self.focus if self.focus is None or self.focus.cell is not None else self._cell_of(self.focus)
        wanted: list[int] = [filed.cell] if filed is not None and filed.cell is not None else []
        if not wanted and self.intent is not None:
            wanted = [t.cell for t in self.targets() if t.cell is not None]
        wanted += self.ranked_cells()
        return next((c for c in wanted if c in values), values[0])

    def integer(self, node: dict[str, Any], name: str) -> int:
        """An integer: a choice index, a cell id, a count, clamped to the schema's bounds."""
        lo = node.get("minimum", node["exclusiveMinimum"] + 1 if "exclusiveMinimum" in node else None)
        hi = node.get("maximum", node["exclusiveMaximum"] - 1 if "exclusiveMaximum" in node else None)
        value: int | None = None
        if self.per_choice is not None and _named(name, {"choice", "option", "index"}):
            value = self.per_choice
        elif _named(name, _ANSWER) and self.req.choices:
            value = self.answer_index()
            if value is None:
                value = self._guess(len(self.req.choices))
        elif _named(name, {"image", "picture", "photo"}):
            shown = self.evidence_tiles()
            value = shown[0].image if shown else None
        elif _named(name, _IDS):
            filed = self.focus if self.focus is None or self.focus.cell is not None else self._cell_of(self.focus)
            if filed is not None:
                value = filed.cell
            else:
                ranked = self.ranked_cells()
                value = ranked[0] if ranked else None
        elif _named(name, _COUNT):
            value = self.count()
        if value is None:
            value = int(lo) if lo is not None else 0
        if lo is not None:
            value = max(int(lo), value)
        if hi is not None:
            value = min(int(hi), value)
        return value

    def number(self, node: dict[str, Any], name: str) -> float:
        """A number: a confidence or a time, clamped to the schema's bounds."""
        value = 0.0
        if _named(name, _CONFIDENCE):
            tile = self.focus
            value = 0.9 if tile is not None and self.req.is_evidence(tile) else 0.5 if self.evidence_tiles() else 0.2
        elif _named(name, _TIME) and self.span is not None and self.focus is None:
            value = self.span[1] if "end" in words_of(name) else self.span[0]
        elif _named(name, _TIME):
            evidence = self.evidence_tiles()
            tile = self.focus or (evidence[0] if evidence else None)
            if tile is not None:
                start, end = self.req.span_of(tile)
                pick = end if "end" in words_of(name) else start
                value = float(pick) if pick is not None else 0.0
        elif _named(name, _COUNT):
            value = float(self.count() or 0)
        if "minimum" in node:
            value = max(float(node["minimum"]), value)
        if "exclusiveMinimum" in node and value <= float(node["exclusiveMinimum"]):
            value = float(node["exclusiveMinimum"]) + 1e-3
        if "maximum" in node:
            value = min(float(node["maximum"]), value)
        if "exclusiveMaximum" in node and value >= float(node["exclusiveMaximum"]):
            value = float(node["exclusiveMaximum"]) - 1e-3
        return value

    def boolean(self, name: str) -> bool:
        """A boolean: whether the evidence suffices, or whether what was asked about is in view."""
        if _named(name, _SUFFICIENT):
            return self.sufficient()
        if _named(name, _PRESENT):
            return bool(self.evidence_tiles())
        return False

    def string(self, node: dict[str, Any], name: str) -> str:
        """A string: a search plan, a description of the tile in hand, an answer, or a summary."""
        if _named(name, _TASK) and not _named(name, _TEXT):
            looks = ", ".join(self.req.context) or "the moment the question asks about"
            text = f"look for {looks} on screen and read what is shown with it"
            if self.req.choices:
                text += "; candidates: " + "; ".join(self.req.choices)
        elif self.focus is not None:
            text = self.describe(self.focus)
        elif _named(name, _ANSWER):
            idx = self.answer_index()
            text = self.req.choices[idx] if idx is not None else self.open_answer()
        elif _named(name, _TEXT) or not name:
            text = self.overview()
        else:
            text = ""
        return self._fit_text(text, node)

    @staticmethod
    def _fit_text(text: str, node: dict[str, Any]) -> str:
        """``text`` cut to ``maxLength`` and padded to ``minLength``."""
        if "maxLength" in node:
            text = text[: int(node["maxLength"])]
        return text.ljust(int(node.get("minLength", 0)), ".")

    # -- judgement -------------------------------------------------------------------------------

    def evidence_tiles(self) -> list[Tile]:
        """Tiles that hold what would answer the question (close-ups first: they are read best)."""
        if self._evidence is None:
            shown = [t for t in self.req.tiles if self.req.is_evidence(t)]
            self._evidence = sorted(shown, key=lambda t: t.cell is not None)
        return self._evidence

    def new_evidence(self) -> list[Tile]:
        """Evidence not yet written down in the request, one tile per appearance, with a cell to file it under."""
        fresh: list[Tile] = []
        filed_cells: set[int | None] = set()
        for tile in self.evidence_tiles():
            filed = tile if tile.cell is not None else self._cell_of(tile)
            if filed is None or filed.cell in filed_cells:
                continue
            if self._noted_close_up(tile) if tile.cell is None else self.req.already_noted(tile):
                continue
            if tile.cell is not None and self.req.run_of(tile, self._same_as(tile))[0] is not tile:
                continue  # one appearance spans consecutive frames: file it once, at its first
            filed_cells.add(filed.cell)
            fresh.append(tile)
        return fresh

    def _same_as(self, tile: Tile) -> Any:
        """A test for "this cell shows the same thing": the same choices, or for counting the counted thing."""
        if self.req.counting or not self.req.choices:
            return self.req.counted_in
        shown = set(self.req.choices_in(tile))
        return lambda other: bool(shown & set(self.req.choices_in(other))) and self.req.is_evidence(other)

    def _cell_of(self, tile: Tile) -> Tile | None:
        return self.req.cell_at(tile.time) if tile.time is not None else None

    def _noted_close_up(self, tile: Tile) -> bool:
        return tile.time is not None and self.req.noted(tile, tile.time, tile.time)

    def ranked_cells(self) -> list[int]:
        """Unmasked grid cells, most relevant first (reading order within a rank)."""
        tiles = [t for t in self.req.grid_tiles() if not t.masked and t.cell is not None]
        ranked = sorted(tiles, key=lambda t: -self.req.relevance(t))
        out: list[int] = []
        for t in ranked:
            if t.cell is not None and t.cell not in out:
                out.append(t.cell)
        return out

    def cell_ids(self, lo: int, hi: int, items: dict[str, Any], suggest: bool = False) -> list[int]:
        """Between ``lo`` and ``hi`` distinct ids: the relevant cells first, or only cue cells for suggestions."""
        ranked = self.ranked_cells()
        if suggest:
            useful = [t.cell for t in self.req.grid_tiles() if self.req.is_anchor(t) and not self.req.is_evidence(t)]
        else:
            useful = [c for c in ranked if any(t.cell == c and self.req.relevance(t) > 0 for t in self.req.tiles)]
        if self.focus is None and self.intent in ("open", "zoom", "around", "flag", "record", "stop", "back"):
            useful = [t.cell for t in self.targets()]  # an action's own cells (none to stop or go back)
        count = max(lo, min(hi, len(useful)))
        pool = [c for c in useful if c is not None] + [c for c in ranked if c not in useful]
        mx = items.get("maximum")
        mn = int(items.get("minimum", 0))
        listed = items.get("enum")
        fits = (lambda c: c in listed) if listed else (lambda c: (mx is None or c <= mx) and c >= mn)
        valid = [c for c in pool if fits(c)][:count]
        free = iter(listed) if listed else itertools.count(mn)
        for extra in free:  # nothing seen to justify more: the first free ids
            if len(valid) >= lo or (mx is not None and extra > mx):
                break
            if extra not in valid:
                valid.append(extra)
        return valid[:hi]

    def choose_action(self, allowed: list[str]) -> str:
        """The action a careful searcher takes given what it sees, among ``allowed`` (by what each means)."""
        by_intent: dict[str, str] = {}
        for value in allowed:
            intent = intent_of(value, self._described(value))
            if intent is not None and intent not in by_intent:
                by_intent[intent] = value

        def pick(*intents: str) -> str | None:
            return next((by_intent[i] for i in intents if i in by_intent), None)

        if not self.req.sights:
            return self._plan_from_text(pick, allowed)
        if self.new_evidence() and (record := pick("record")):
            return record
        if self._zoom_target() is not None and (zoom := pick("zoom")):
            return zoom
        if self._around_target() is not None and (around := pick("around")):
            return around
        cues = [t for t in self.req.grid_tiles() if self.req.is_anchor(t) and not self.req.is_evidence(t)]
        if cues and not self.evidence_tiles():
            if flag := pick("flag"):
                return flag
            if opened := pick("open"):
                return opened
        nothing = not any(self.req.relevance(t) >= 2 for t in self.req.tiles)
        if nothing and (back := pick("back")):
            return back
        return pick("stop") or pick("back") or allowed[-1]

    def _plan_from_text(self, pick: Any, allowed: list[str]) -> str:
        """With no picture to look at, choose from what the text reports, as a careful searcher would.

        Stop when the reports settle the question; before anything was reported, take a broad look.
        Then, in order: a moment where a choice was reported (to confirm it: open the stretch around
        it when the reports there are sparse, else look closely); the least-reported part of the
        stretch where the question's subject was reported (first where text there could not be
        read: a closer look); the least-reported stretch of all. A
        stretch is opened a piece at a time (at most twice what a close look covers); one reported
        every :data:`COVERED_S` seconds has been seen.
        """
        if self.sufficient() and (stop := pick("stop")):
            return str(stop)
        noted = sorted({t for line in self.req.written_lines() for t in clock_times(line)})
        if len(noted) < 3 and (broad := pick("look")):  # next to nothing reported yet
            return str(broad)
        zoom, wider = pick("zoom"), pick("open")
        close = (stated_limit(self._described(zoom), "most") if zoom else None) or 10.0

        def around(t: float) -> tuple[float, float]:
            before = max((x for x in noted if x < t - SAME_SPAN_S), default=t - close / 2)
            after = min((x for x in noted if x > t + SAME_SPAN_S), default=t + close / 2)
            return before, after

        timed = [s for s in self.req.written_sightings() if s.start is not None]
        for seen in sorted((s for s in timed if s.choices), key=lambda s: (-s.strength, s.start or 0.0)):
            t = float(seen.start or 0.0)
            a, b = around(t)
            if sum(1 for x in noted if t - close / 2 <= x <= t + close / 2) >= close:
                continue  # reported second by second around it already: nothing closer to see
            if b - a > close and wider:
                self.span = (max(a, t - close), min(b, t + close))
                return str(wider)
            if zoom:
                self.span = (max(0.0, t - close / 2), t + close / 2)
                return str(zoom)
        for seen in timed:  # the subject reported with text that could not be read: look closer there
            t = float(seen.start or 0.0)
            near = sum(1 for x in noted if t - close / 2 <= x <= t + close / 2)
            if seen.context and _UNREAD.search(seen.line) and zoom and near < close:
                self.span = (max(0.0, t - close / 2), t + close / 2)
                return str(zoom)
        subject = sorted(float(s.start or 0.0) for s in timed if s.context and not s.choices)
        stretches = []
        if subject:
            first, last = around(subject[0])[0], around(subject[-1])[1]
            stretches.append([first, *(x for x in noted if first < x < last), last])
        stretches.append(noted)
        for marks in stretches:
            gaps = sorted(itertools.pairwise(marks), key=lambda pair: pair[0] - pair[1])
            for a, b in gaps:
                if b - a > COVERED_S and wider:
                    self.span = (a, min(b, a + 2 * close))
                    return str(wider)
        return str(pick("stop") or allowed[-1])

    def _described(self, value: str) -> str:
        """The description the request's text gives of an enum value (``VALUE: what it does``), if any."""
        match = re.search(rf"^\s*[-*]?\s*{re.escape(value)}\s*[:=-]\s*(.+)$", self.req.text, re.MULTILINE)
        return match.group(1) if match else ""

    def targets(self) -> list[Tile]:
        """The cells the chosen action applies to."""
        if self.intent == "record":
            return [self._cell_of(t) or t if t.cell is None else t for t in self.new_evidence()]
        if self.intent == "zoom":
            target = self._zoom_target()
            return [target] if target is not None else []
        if self.intent == "around":
            target = self._around_target()
            return [target] if target is not None else []
        if self.intent in ("open", "flag"):
            return [t for t in self.req.grid_tiles() if self.req.is_anchor(t) and not self.req.is_evidence(t)]
        return []

    def _zoom_target(self) -> Tile | None:
        """A cell that shows the context and more marks too small to read than its image's cells usually do.

        Small print that every cell carries (a tag, a ticker) is part of the picture's frame; a
        cell with more of it than its neighbours holds something they do not.
        """
        if self.req.close_ups() or self.evidence_tiles():
            return None
        cells = [t for t in self.req.grid_tiles() if not t.masked]
        if not cells:
            return None
        usual = statistics.median(t.unreadable for t in cells)
        cued = [t for t in cells if t.unreadable > usual and self.req.context_in(t)]
        return max(cued, key=lambda t: t.unreadable) if cued else None

    def _around_target(self) -> Tile | None:
        """For "right after (before) X": X at the edge of the view with nothing after (before) it here."""
        if self.req.direction is None or self.evidence_tiles():
            return None
        cues = [t for t in self.req.grid_tiles() if self.req.context_in(t) and not t.masked]
        if not cues:
            return None
        cells = self.req.cells_of(cues[0])
        edge = (
            max(cues, key=lambda t: t.time or 0.0)
            if self.req.direction == "after"
            else min(cues, key=lambda t: t.time or 0.0)
        )
        at = cells.index(edge) if edge in cells else -1
        rest = cells[at + 1 :] if self.req.direction == "after" else cells[:at]
        if any(self.req.choices_in(t) for t in rest):
            return None  # the next choice is in view; it is just too far away to be "right" next to X
        start, end = self.req.span_of(cells[-1] if self.req.direction == "after" else cells[0])
        bound = end if self.req.direction == "after" else start
        if bound is None or edge.time is None or abs(bound - edge.time) >= IMMEDIATE_S:
            return None  # the view goes on well past X and nothing follows it: nothing is right after X here
        return edge

    # -- answers ---------------------------------------------------------------------------------

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
        """Separate appearances of the counted thing: spans of sightings merged where they touch."""
        spans: list[tuple[float, float]] = []
        for s in self.sightings():
            if not s.context or s.start is None or s.end is None:
                continue
            if s.tile is not None and s.tile.cell is None and s.tile.evidence is None and s.tile.time is None:
                continue  # a picture without time: counted line by line in count()
            if s.tile is not None and s.tile.cell is not None:
                run = self.req.run_of(s.tile, self.req.counted_in)
                start, end = self.req.span_of(run[0])[0], self.req.span_of(run[-1])[1]
                spans.append((start or 0.0, end if end is not None else start or 0.0))
            else:
                spans.append((s.start, s.end))
        merged: list[tuple[float, float]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1] + SAME_SPAN_S:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        return merged

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
        """Whether what was seen settles the question."""
        if not self.req.choices:
            noted = any(s.context and s.start is not None for s in self.req.written_sightings())
            return bool(self.evidence_tiles()) or noted
        idx = self.answer_index()
        if idx is None:
            return False
        if self.req.counting:
            share = searched_share(self.req.text)
            return share is not None and share >= COUNT_COVERAGE_PCT
        seen = [s for s in self.sightings() if s.choices]
        if self.req.ordering is not None:
            return all(any(i in s.choices and s.start is not None for s in seen) for i in range(len(self.req.choices)))
        if self.req.direction is not None:
            return any(s.gap is not None and idx in s.choices for s in seen)
        return any(idx in s.choices and (s.strength == 2 or not self.req.names) for s in seen)

    def cited_labels(self) -> list[str]:
        """Labels of tagged tiles that show the chosen answer (or anything relevant, for open questions)."""
        idx = self.answer_index()
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
        return out

    # -- words -----------------------------------------------------------------------------------

    def describe(self, tile: Tile) -> str:
        """One sentence on what a tile shows, with the stretch of video it stands for."""
        where = f"cell {tile.cell}" if tile.cell is not None else f"item {tile.evidence}" if tile.evidence else "image"
        start, end = self.req.span_of(tile)
        if tile.cell is None and tile.evidence is None and tile.time is not None:
            filed = self._cell_of(tile)
            if filed is not None:
                where = f"zoomed frame of cell {filed.cell}"
        when = ""
        if start is not None:
            if tile.cell is not None and self.req.is_evidence(tile):
                run = self.req.run_of(tile, self._same_as(tile))
                first = self.req.span_of(run[0])[0]
                start, end = (start if first is None else first), self.req.span_of(run[-1])[1]
            when = f" at {start:.1f} s" if end is None or end <= start else f" ({start:.1f}-{end:.1f} s)"
        shown = tile.text or "nothing legible"
        sentence = f"{where}{when} shows: {shown}"
        if self.req.direction is not None:
            found = self.req.anchor_for(tile)
            if found is not None:
                gap, anchor = found
                sentence += f"; {gap:.1f} s {self.req.direction} {' '.join(self.req.context_in(anchor))}"
        if tile.unreadable:
            sentence += "; some text there is too small or blurred to read"
        return sentence

    def overview(self) -> str:
        """A sentence on what the images show that matters to the question, and what could not be read."""
        if not self.req.sights:
            noted = [s.line.strip() for s in self.req.written_sightings() if s.choices or s.context]
            return "no image was given" + (f"; the text says: {noted[0]}" if noted else ", so nothing could be seen")
        ev = self.evidence_tiles()
        if ev:
            text = "; ".join(self.describe(t) for t in ev[:4])
        else:
            cues = [t for t in self.req.tiles if self.req.is_anchor(t)]
            text = (
                "related: " + "; ".join(self.describe(t) for t in cues[:3])
                if cues
                else "nothing related to the question is visible here"
            )
        unread = sum(t.unreadable for t in self.req.tiles if not t.masked)
        if unread:
            text += f"; {unread} line(s) of text are too small or blurred to read at this size"
        return text

    def open_answer(self) -> str:
        """A free-text answer from the evidence, for questions without choices."""
        ev = self.evidence_tiles()
        if not ev:
            read = [t.text for t in self.req.tiles if t.text and not t.masked]
            return ("I can read: " + "; ".join(read[:4])) if read else "I could not find the answer in what I saw."
        return "Seen: " + "; ".join(self.describe(t) for t in ev[:3])

    def _guess(self, n: int) -> int:
        """A deterministic pick when nothing supports any choice (the stand-in's own; the agent never guesses)."""
        digest = hashlib.sha256(f"{self.seed}:{self.req.question}".encode()).digest()
        return digest[0] % max(1, n)


def _smallest(node: dict[str, Any]) -> Any:
    """The simplest value a schema allows (used only to pad or to stop)."""
    if "const" in node:
        return node["const"]
    if node.get("enum"):
        return node["enum"][0]
    kind = node.get("type")
    kind = next((k for k in kind if k != "null"), "null") if isinstance(kind, list) else kind
    if kind in ("integer", "number"):
        low = node.get("minimum", node["exclusiveMinimum"] + 1 if "exclusiveMinimum" in node else 0)
        return int(low) if kind == "integer" else float(low)
    if kind == "string":
        return "".ljust(int(node.get("minLength", 0)), ".")
    if kind == "boolean":
        return False
    if kind == "array":
        return [_smallest(node.get("items") or {}) for _ in range(int(node.get("minItems", 0)))]
    if kind == "object" or "properties" in node:
        props = node.get("properties") or {}
        return {k: _smallest(props[k]) for k in node.get("required", []) if k in props}
    return None


def _distinct(node: dict[str, Any], n: int) -> Any:
    """The ``n``-th of a run of different values a schema allows (to pad an array with new items)."""
    kind = node.get("type")
    if node.get("enum"):
        values = node["enum"]
        return values[n % len(values)]
    if kind == "integer":
        return int(node.get("minimum", 0)) + n
    if kind == "number":
        return float(node.get("minimum", 0)) + n
    if kind == "string":
        return f"item {n + 1}"[: int(node["maxLength"])] if "maxLength" in node else f"item {n + 1}"
    return _smallest(node)


def _polarity(value: str) -> str:
    """Whether a verdict-like value says yes, no, or that it is not known (negations read as such)."""
    words = words_of(value)
    if any(w in ("unclear", "unknown", "uncertain", "insufficient", "undetermined", "maybe") for w in words):
        return "unknown"
    if "evidence" in words and any(w in ("no", "without", "lacking") for w in words):
        return "unknown"
    negated = any(w in ("not", "no", "non") for w in words) or any(w.startswith("un") for w in words)
    if any(w.startswith(("contradict", "refut", "against", "false", "wrong", "reject")) for w in words):
        return "no"
    if any(w.startswith(("support", "confirm", "true", "yes", "consistent", "correct")) for w in words):
        return "no" if negated else "yes"
    return "no" if negated else "unknown"


def _written_gap(line: str) -> float | None:
    match = re.search(r"(\d+(?:\.\d+)?)\s*s\s+(?:after|before)\b", line)
    return float(match.group(1)) if match else None


def respond(schema: dict[str, Any] | None, request: Request, seed: int = 0) -> Any:
    """The stand-in's reply: a value valid for ``schema``, or free text when there is no schema."""
    filler = Filler(request, schema or {}, seed)
    if schema is None:
        idx = filler.answer_index()
        return request.choices[idx] if idx is not None else filler.open_answer()
    return filler.value(schema)
