"""Filling a reply schema from what the stand-in understood (:class:`.policy.Request`).

Every field is filled by what its name and type mean in ordinary usage: an enum of actions by
what each value does (its words, or the description the request gives of it), ids by relevance,
an answer by the evidence, a count by the appearances seen, a boolean of sufficiency by whether
the evidence settles the question, a description by what was read (and what could not be).
Fields it has no opinion on get the simplest valid value.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from videoatlas.llm.sim.language import intent_of, norm, searched_share, words_of
from videoatlas.llm.sim.perception import Tile
from videoatlas.llm.sim.policy import COUNT_COVERAGE_PCT, SAME_SPAN_S, Request, Sighting

_ANSWER = {"answer", "choice", "option", "selection", "selected", "pick"}
_IDS = {"cell", "cells", "id", "ids", "tile", "tiles", "index", "indices", "top"}
_COUNT = {"count", "number", "total", "quantity", "many", "occurrences"}
_TEXT = {"summary", "reason", "reasoning", "description", "describe", "note", "notes", "why", "explanation", "text"}
_TEXT |= {"rationale", "caption", "observation", "observations", "content", "thought", "analysis", "comment"}
_TASK = {"task", "plan", "query", "search", "target"}
_SUFFICIENT = {"sufficient", "enough", "done", "complete", "answerable", "settled", "conclusive", "final"}
_PRESENT = {"found", "visible", "present", "contains", "seen", "shown", "exists"}
_LEAVE_OUT = {"erase", "drop", "remove", "discard", "delete", "forget", "ignore"}
_SUGGEST = {"explore", "suggest", "suggestions", "next", "hints", "ranges", "revisit"}
_CONFIDENCE = {"confidence", "score", "probability", "prob", "certainty", "likelihood"}
_TIME = {"time", "timestamp", "start", "end", "second", "seconds", "at", "when", "moment"}
_CITE = {"evidence", "labels", "label", "cite", "cites", "citations", "references", "sources"}


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
        self._evidence: list[Tile] | None = None

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
            return next(o for o, tag in tagged if tag == wanted)
        return non_null[0]

    def _tag(self, option: dict[str, Any]) -> str | None:
        """The constant an object variant is tagged with (a discriminated union's action), if any."""
        for prop in (option.get("properties") or {}).values():
            prop = self.resolve(prop)
            if "const" in prop and isinstance(prop["const"], str) and intent_of(prop["const"]) is not None:
                return str(prop["const"])
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
        node = self.resolve(node)
        values = node.get("enum") or ([node["const"]] if "const" in node else [])
        return bool(values) and sum(1 for v in values if intent_of(str(v)) is not None) >= max(1, len(values) // 2)

    def array(self, node: dict[str, Any], name: str) -> list[Any]:
        """An array: ids ranked by relevance, one object per choice or per sighting, labels cited, or the minimum."""
        lo = int(node.get("minItems", 0))
        hi = int(node.get("maxItems", max(lo, 16)))
        items = self.resolve(node.get("items", {}))
        if _named(name, _LEAVE_OUT):
            return [self.value(items, name) for _ in range(lo)]  # a careful model keeps what it has
        if items.get("type") == "integer" or (_named(name, _IDS) and not items.get("properties")):
            return self.cell_ids(lo, hi, items, suggest=_named(name, _SUGGEST))
        if items.get("type") == "object" or "properties" in items:
            return self._objects(items, name, lo, hi)
        if items.get("type") == "string" and "enum" not in items and _named(name, _CITE):
            return self.cited_labels()[:hi]
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
        elif _named(name, _SUGGEST) or (any(_named(k, {"start"}) for k in props) and not self.req.tiles):
            out = []
        else:
            recording = self.intent == "record" or not any(_named(k, _IDS) for k in props)
            tiles = self.new_evidence() if any(_named(k, _IDS) for k in props) else self._described_tiles()
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
        """An enum value by its meaning: actions, directions, search modes, verdicts, answers."""
        text = [str(v) for v in values]
        lower = [v.lower() for v in text]
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
        if any(v.startswith("support") for v in lower):
            return values[lower.index(self._verdict(lower))]
        names_choices = bool(self.req.choices) and {norm(v) for v in text} == {norm(c) for c in self.req.choices}
        if _named(name, _ANSWER) or not name or names_choices:
            idx = self.answer_index()
            if idx is None:
                idx = self._guess(len(self.req.choices) or len(values))
            if self.req.choices and idx < len(self.req.choices):
                for candidate in (self.req.choices[idx], chr(ord("A") + idx), str(idx)):
                    if candidate in text:
                        return values[text.index(candidate)]
            return values[min(idx, len(values) - 1)]
        return values[0]

    def _verdict(self, lower: list[str]) -> str:
        """``supported``, ``contradicted`` or the "don't know" value, for the choice in hand."""
        i = self.per_choice
        answer = self.answer_index()
        backed = i is not None and any(i in s.choices and s.strength for s in self.sightings())
        if i is not None and answer is not None and i == answer and backed:
            return next(v for v in lower if v.startswith("support"))
        if i is not None and answer is not None and self.sufficient():
            against = next((v for v in lower if v.startswith(("contradict", "refut", "against"))), None)
            if against:
                return against
        return next((v for v in lower if v.startswith(("unclear", "no", "unknown", "insufficient"))), lower[-1])

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
        if "maximum" in node:
            value = min(float(node["maximum"]), value)
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
        if "enum" in node:
            return str(node["enum"][0])
        max_len = node.get("maxLength")
        text = text[: int(max_len)] if max_len else text
        return text if len(text) >= int(node.get("minLength", 0)) else text.ljust(int(node["minLength"]), ".")

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
        if tile.time is None:
            return False
        shown = set(self.req.choices_in(tile)) or None
        for seen in self.req.written_sightings():
            if seen.start is None or seen.end is None:
                continue
            words = set(self.req.context_in(tile))
            same = bool(shown & set(seen.choices)) if shown else bool(words & set(seen.context))
            if same and seen.start - SAME_SPAN_S <= tile.time <= seen.end + SAME_SPAN_S:
                return True
        return False

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
        if self.focus is None and self.intent in ("open", "zoom", "around", "flag", "record"):
            useful = [t.cell for t in self.targets()]
        count = max(lo, min(hi, len(useful)))
        pool = [c for c in useful if c is not None] + [c for c in ranked if c not in useful]
        mx = items.get("maximum")
        mn = int(items.get("minimum", 0))
        valid = [c for c in pool if (mx is None or c <= mx) and c >= mn][:count]
        filler = mn
        while len(valid) < lo:  # nothing seen to justify more: the first free ids
            if filler not in valid:
                valid.append(filler)
            filler += 1
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
        """A cell with marks too small to read, where the answer may be: it shows the context, or nothing does."""
        if self.req.close_ups() or self.evidence_tiles():
            return None
        small = [t for t in self.req.grid_tiles() if t.unreadable and not t.masked]
        cued = [t for t in small if self.req.context_in(t)]
        if cued:
            return cued[0]
        if not any(self.req.context_in(t) for t in self.req.grid_tiles()):
            return small[0] if small else None
        return None

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
            return bool(self.evidence_tiles()) or any(s.context for s in self.req.written_sightings())
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
                start, end = self.req.span_of(run[0])[0] or start, self.req.span_of(run[-1])[1]
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
