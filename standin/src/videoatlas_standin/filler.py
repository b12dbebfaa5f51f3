"""Filling a reply schema from what the stand-in understood (:class:`.policy.Request`).

A field named by words of its own (``room_number``, ``plate``) takes the value a picture prints
next to the label that means what the field says (:meth:`Filler.read_fields`: label and value pairs
from :mod:`.labels`, matched by a real text model, :mod:`.meaning`), typed by its schema; one nothing
labels gets its type's empty value. Every other field is filled by what its name and type mean in
ordinary usage: an enum of actions by what each value does (its words, or the description the request
gives of it), ids by relevance, an answer by the evidence, a count by the appearances seen, a boolean
of sufficiency by whether the evidence settles the question, a description by what was read.
Any other enum takes the member the user's question states word for word (the longest: "right
after" over "after"), as a model copies a relation or kind the question names, or else the one member
that says the question's side of its anchor in other words; an enum of amounts (``num_...``,
``sample_size``) takes the largest for a count or an order, the densest look offered; an object with
one field per numbered item (``segment_12``) judges each on the item's own stretch (:mod:`.items`). Any
field it has no opinion on gets the simplest valid value.
"""

from __future__ import annotations

from typing import Any

from videoatlas_standin.closer import Closer
from videoatlas_standin.described import member_by_reach
from videoatlas_standin.fields import (
    AMOUNT,
    ANSWER,
    CITE,
    CONFIDENCE,
    COUNT,
    GENERIC,
    IDS,
    LEAVE_OUT,
    PRESENT,
    RAW,
    SUFFICIENT,
    SUGGEST,
    TASK,
    TEXT,
    TIME,
    WORD,
    as_written,
    fit_text,
    has_own_word,
    is_action_enum,
    is_amount,
    is_scalar,
    named_by,
    nth_distinct,
    polarity_of,
    smallest_value,
    stated_member,
    typed_value,
)
from videoatlas_standin.items import keyed_items, listed_spans
from videoatlas_standin.labels import Labelled
from videoatlas_standin.language import index_base, intent_of, norm, words_of
from videoatlas_standin.meaning import assign
from videoatlas_standin.perception import words_of_tile
from videoatlas_standin.policy import Request
from videoatlas_standin.relations import member_saying, reference_field, reference_points
from videoatlas_standin.spans import placed, tag_of


class Filler(Closer):
    """Builds a schema-valid JSON value, choosing field values from a :class:`Request`."""

    def __init__(self, request: Request, schema: dict[str, Any], seed: int = 0) -> None:
        super().__init__(request, seed)
        self.root = schema
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
                return smallest_value(self.resolve(node))
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
                out = None if picked is None else self.value(picked, name)
                if self.stretch is not None and self.stretch[0] is picked and isinstance(out, dict):
                    out = placed(out, self.stretch[1], self.stretch[2], self.stretch[3])  # where nobody looked yet
                return out
        if node.get("allOf"):
            return self.value(node["allOf"][0], name)
        if "enum" in node:
            return as_written(self.enum(list(node["enum"]), name))
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
        """A variant of a union: one whose ``action``-like constant matches the chosen intent, else the first.

        While looks found nothing, one that takes a stretch goes where nobody looked (:meth:`another_stretch`);
        unsettled, with no action that opens, it looks closer where the subject is in view (:meth:`subject_look`).
        """
        tagged = [(o, tag_of(o, self.resolve)) for o in options if o.get("type") != "null"]
        acting = [t for _, t in tagged if t is not None and intent_of(t, self._described(t)) is not None]
        wanted = self.choose_action(acting) if acting else None
        heard = wanted is not None and intent_of(wanted, self._described(wanted)) == "listen"  # another sense first
        moved = None if heard else self.another_stretch(tagged, self.resolve)
        if moved or (not heard and (moved := self.subject_look(tagged, self.resolve, wanted))):
            self.stretch, wanted = moved, tag_of(moved[0], self.resolve)
        if wanted is not None:
            self.intent = intent_of(wanted, self._described(wanted))  # the variant's other fields follow it
            return next(o for o, t in tagged if t == wanted)
        return tagged[0][0] if tagged else None

    # -- composite ---------------------------------------------------------------------------------

    def obj(self, node: dict[str, Any]) -> dict[str, Any]:
        """An object: its action first (other fields follow it), then every field it has a value for."""
        props: dict[str, Any] = node.get("properties", {})
        required = set(node.get("required", props.keys()))
        read = self.read_fields(props)
        items = keyed_items(props, self.resolve)
        spans = listed_spans(self.req.text) if items else {}
        out: dict[str, Any] = {}
        order = sorted(props, key=lambda k: (not self._is_action(props[k], k), k))
        for key in order:
            value = typed_value(self.resolve(props[key]), read[key].value) if key in read else None
            if value is None and items.get(key) in spans:  # one field per listed item: judged on its own stretch
                self.focus = self.tile_within(spans[items[key]])
                value, self.focus = self.value(props[key], key), None
            if value is None:
                value = self.value(props[key], key)
            if value is not None or key in required:
                out[key] = value
        return {k: out[k] for k in props if k in out}

    def read_fields(self, props: dict[str, Any]) -> dict[str, Labelled]:
        """The fields of an object that ask for a value the pictures label, each with the pair it wants.

        A field named by words of its own (``room_number``, ``plate``) wants the pair whose label means
        what its name and description say (by the text model, :mod:`.meaning`; a shared word is a fit
        too); each label fills one field, the best fits first; a field left then may take the rest of a
        line in letters whose first words it fits (``CITY PARIS``). A lone field named only by a generic
        word (``value``, ``result``) wants the pair whose label the question asks about.
        """
        pairs = self.req.labelled()
        spelled = self.req.letter_pairs()
        if not pairs and not spelled:
            return {}
        specific: list[tuple[str, dict[str, Any]]] = []
        generic: list[str] = []
        for key, sub in props.items():
            node = self.resolve(sub)
            if not is_scalar(node) or "const" in node or self._is_action(node, key):
                continue  # a fixed value, or a step to take: not something printed
            if has_own_word(key):
                specific.append((key, node))
            elif set(words_of(key)) <= GENERIC:
                generic.append(key)
        out: dict[str, Labelled] = {}
        # Values labelled as such first; then, for the fields left, lines in letters only split by the field's meaning
        # (``CITY PARIS``: only a field that asks for a city makes "CITY" a label).
        for found in (pairs, spelled):
            left = [(k, str(n.get("description") or n.get("title") or "")) for k, n in specific if k not in out]
            labels = list(dict.fromkeys(p.label for p in found))
            for i, j in assign(left, labels).items():
                out[left[i][0]] = next(p for p in found if p.label == labels[j])
        if len(generic) == 1 and not specific and not self.req.choices:
            asked = self.asked_pair()
            if asked is not None:
                out[generic[0]] = asked
        return out

    def _is_action(self, node: dict[str, Any], name: str) -> bool:
        """An enum of things to do (:func:`.fields.is_action_enum`)."""
        return is_action_enum(self.resolve(node))

    def array(self, node: dict[str, Any], name: str) -> list[Any]:
        """An array: ids ranked by relevance, one object per choice or per sighting, labels cited, or the minimum."""
        items = self.resolve(node.get("items", {}))
        out = self._items(node, name)
        if node.get("uniqueItems"):
            out = [v for i, v in enumerate(out) if v not in out[:i]]
        if items.get("type") == "string":
            out = [fit_text(str(v), items) for v in out]
        lo = int(node.get("minItems", 0))
        pad = 0
        # Pad to the minimum as someone listing things does: with values not listed yet, as long as the
        # items allow new ones (an id list has no uniqueItems, which vLLM's backends cannot enforce),
        # then with the simplest value.
        while len(out) < lo and pad < 1000:
            extra = nth_distinct(items, pad)
            if extra not in out:
                out.append(extra)
            pad += 1
        out += [smallest_value(items) for _ in range(lo - len(out))]
        return out[: int(node["maxItems"])] if "maxItems" in node else out

    def _items(self, node: dict[str, Any], name: str) -> list[Any]:
        lo = int(node.get("minItems", 0))
        hi = int(node.get("maxItems", max(lo, 16)))
        items = self.resolve(node.get("items", {}))
        if named_by(name, LEAVE_OUT):
            return [self.value(items, name) for _ in range(lo)]  # a careful model keeps what it has
        if items.get("type") == "integer" or (named_by(name, IDS) and not items.get("properties")):
            point = reference_field(name, str(node.get("description") or ""))  # the frames showing an anchor
            return self.cell_ids(lo, hi, items, suggest=named_by(name, SUGGEST), point=point)
        if items.get("type") == "object" or "properties" in items:
            return self._objects(items, name, lo, hi)
        if items.get("type") == "string" and named_by(name, CITE):
            listed = items.get("enum")
            return [label for label in self.cited_labels() if listed is None or label in listed][:hi]
        if items.get("type") == "string" and "enum" not in items and not named_by(name, SUGGEST):
            read = [t.text for t in self.req.tiles if t.text and not t.masked]
            out = read[:hi] if read else []
            return out + [self.value(items, name) for _ in range(max(0, lo - len(out)))]
        return [self.value(items, name) for _ in range(lo)]

    def _objects(self, items: dict[str, Any], name: str, lo: int, hi: int) -> list[Any]:
        props = items.get("properties") or {}
        out: list[Any] = []
        if any(named_by(k, {"choice", "option"}) for k in props) and self.req.choices:
            for i in range(min(hi, len(self.req.choices))):
                self.per_choice = i
                out.append(self.value(items, name))
            self.per_choice = None
        elif named_by(name, SUGGEST) or self.intent == "listen":
            out = []  # places to look at next are cells (ranked elsewhere); a small model proposes no ranges
        else:
            with_ids = any(named_by(k, IDS) for k in props)
            # Items with ids are what an action records; with no action chosen, they describe what is shown.
            recording = self.intent in ("record", None) or not with_ids
            tiles = self.new_evidence() if with_ids and self.intent is not None else self._described_tiles()
            if not with_ids and any(named_by(k, WORD) for k in props):
                tiles = [w for t in tiles for w in words_of_tile(t)]  # a list of words: one item per word
            for tile in tiles[:hi] if recording else []:
                self.focus = tile
                out.append(self.value(items, name))
            self.focus = None
        while len(out) < lo:
            out.append(self.value(items, name))
        return out[:hi]

    # -- scalars ----------------------------------------------------------------------------------

    def enum(self, values: list[Any], name: str) -> Any:
        """An enum value by its meaning: ids, actions, directions, verdicts, answers, or the reach the text gives it.

        Any other enum: the member the question states or says its anchor's side with (:func:`.stated_member`,
        :func:`.member_saying`); else, for a wide question, an enum of amounts takes its largest.
        """
        if values and all(isinstance(v, int) for v in values) and (named_by(name, IDS) or self.scored_ids(values)):
            return self.id_value(values)  # ids, or numbered items the text lists with a score each
        text = [str(v) for v in values]
        lower = [v.lower() for v in text]
        names_choices = bool(self.req.choices) and {norm(v) for v in text} == {norm(c) for c in self.req.choices}
        letters = [chr(ord("A") + i) for i in range(len(self.req.choices))]
        labels_choices = bool(self.req.choices) and [v.upper() for v in text] == letters
        if self.per_choice is not None and named_by(name, {"choice", "option", "index"}):
            return self._choice_value(values, text, self.per_choice)  # one item per choice: the one in hand
        if (named_by(name, ANSWER) or names_choices or labels_choices) and self.req.choices:
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
        if (fitting := member_by_reach(text, self.req.text, self.wide())) is not None:  # what the text says each is for
            return values[fitting]
        polarity = {v: polarity_of(v) for v in lower}
        if "yes" in polarity.values() and "unknown" in polarity.values():
            return values[lower.index(self.verdict(polarity))]
        if not name:
            return self._answer_value(values, text)
        stated = stated_member(text, self.req.question)
        if stated is None and self.req.direction is not None:  # the side of an anchor, in other words
            stated = member_saying(text, self.req.direction, self.req.question)
        if stated is None and self.wide() and named_by(name, AMOUNT) and all(is_amount(v) for v in values):
            return max(values)
        return values[stated] if stated is not None else values[0]

    def _answer_value(self, values: list[Any], text: list[str]) -> Any:
        """The enum value that names the best-supported choice (its text, its letter or its index)."""
        idx = self.answer_index()
        if idx is None:
            idx = self._guess(len(self.req.choices) or len(values))
        return self._choice_value(values, text, idx)

    def _choice_value(self, values: list[Any], text: list[str], idx: int) -> Any:
        """The enum value that names choice ``idx``: its text, its letter or its index, else the idx-th value.

        An enum of integers holds indices (a choice "3" is not index 3).
        """
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return idx if idx in values else values[min(idx, len(values) - 1)]
        if self.req.choices and idx < len(self.req.choices):
            wanted = norm(self.req.choices[idx])
            for candidate in (wanted, chr(ord("A") + idx), str(idx)):
                hit = next((i for i, v in enumerate(text) if norm(v) == norm(candidate)), None)
                if hit is not None:
                    return values[hit]
        return values[min(idx, len(values) - 1)]

    def id_value(self, values: list[int]) -> int:
        """One id among ``values``: the tile in hand, else the chosen action's target, else the most relevant."""
        filed = self.focus if self.focus is None or self.focus.cell is not None else self._cell_of(self.focus)
        wanted: list[int] = [filed.cell] if filed is not None and filed.cell is not None else []
        if not wanted and self.intent is not None:
            wanted = [t.cell for t in self.targets() if t.cell is not None]
        wanted += self.ranked_ids(values)
        return next((c for c in wanted if c in values), values[0])

    def integer(self, node: dict[str, Any], name: str) -> int:
        """An integer: a choice index, a cell id, a count, clamped to the schema's bounds."""
        lo = node.get("minimum", node["exclusiveMinimum"] + 1 if "exclusiveMinimum" in node else None)
        hi = node.get("maximum", node["exclusiveMaximum"] - 1 if "exclusiveMaximum" in node else None)
        value: int | None = None
        if self.per_choice is not None and named_by(name, {"choice", "option", "index"}):
            value = self.per_choice
        elif named_by(name, ANSWER) and self.req.choices:
            value = self.answer_index()
            if value is None:
                value = self._guess(len(self.req.choices))
        elif named_by(name, {"image", "picture", "photo"}):
            shown = self.evidence_tiles()
            value = shown[0].image if shown else None
        elif named_by(name, IDS):
            filed = self.focus if self.focus is None or self.focus.cell is not None else self._cell_of(self.focus)
            if filed is not None:
                value = filed.cell
            else:
                ranked = self.ranked_cells()
                value = ranked[0] if ranked else None
        elif named_by(name, COUNT) and (self.req.counting or not has_own_word(name)):
            value = self.count()  # "room_number" names a room, not a count: it is read or left empty
        elif named_by(name, CONFIDENCE) and lo is not None and hi is not None:
            value = round(float(lo) + self.confidence() * (float(hi) - float(lo)))  # a score on the schema's scale
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
        if named_by(name, CONFIDENCE):
            value = self.confidence()
        elif named_by(name, TIME) and self.span is not None and self.focus is None:
            value = self.span[1] if "end" in words_of(name) else self.span[0]
        elif named_by(name, TIME):
            evidence = self.evidence_tiles()
            tile = self.focus or (evidence[0] if evidence else None)
            if tile is not None:
                start, end = self.req.span_of(tile)
                pick = end if "end" in words_of(name) else start
                value = float(pick) if pick is not None else 0.0
        elif named_by(name, COUNT) and (self.req.counting or not has_own_word(name)):
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
        if named_by(name, SUFFICIENT):
            return self.sufficient()
        if named_by(name, PRESENT):
            return bool(self.evidence_tiles())
        return False

    def string(self, node: dict[str, Any], name: str) -> str:
        """A string: a reference point, a search plan, a description of the tile in hand, an answer, or a summary.

        A field for the point a time relation is measured from takes the phrase the question's
        relation governs (:mod:`.relations`), as a model copies it; without a stated relation, nothing.
        """
        point = reference_field(name, str(node.get("description") or ""))
        if point is not None and self.focus is None:
            points = reference_points(self.req.question)
            return fit_text(points[point] if point < len(points) else "", node)
        if named_by(name, TASK) and not named_by(name, TEXT):
            looks = ", ".join(self.req.context) or "the moment asked about"
            text = f"look for {looks} on screen and read what is shown with it"
            if self.req.question:  # a task restates the question it serves: what to find, and where in time
                text = f"{self.req.question} To find it, {text}"
            if self.req.choices:
                text += "; candidates: " + "; ".join(self.req.choices)
        elif self.focus is not None:
            raw = named_by(name, RAW) and not named_by(name, TEXT - RAW)  # what is written there, not a sentence on it
            text = self.focus.text if raw else self.describe(self.focus)
        elif named_by(name, ANSWER):
            idx = self.answer_index()
            text = self.req.choices[idx] if idx is not None else self.open_answer()
        elif named_by(name, TEXT) or not name:
            text = self.overview()
        else:
            text = ""
        return fit_text(text, node)


def respond(schema: dict[str, Any] | None, request: Request, seed: int = 0) -> Any:
    """The stand-in's reply: a value valid for ``schema``, or free text when there is no schema."""
    filler = Filler(request, schema or {}, seed)
    if schema is None:
        idx = filler.answer_index()
        base = index_base(request.text) if request.choices else None
        if idx is not None and base is not None:
            return str(base + idx)  # asked for the choice's number, not its words
        return request.choices[idx] if idx is not None else filler.open_answer()
    return filler.value(schema)
