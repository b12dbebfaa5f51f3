"""Which step a careful searcher takes given what it sees, and which cells that step applies to.

:class:`Actions` chooses among the actions a request offers by what each means (record new
evidence, look closer, look right before or after, open or flag a cue, go back, stop, listen when
asked what is said or when looking found nothing while steps remain: :meth:`Actions.other_means`),
or, with no picture to look at, from what the request's text reports; it also ranks the grid's cells.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections.abc import Callable
from typing import Any

from videoatlas_standin.answers import Answers
from videoatlas_standin.items import listed_scores
from videoatlas_standin.language import budget_left, clock_times, intent_of, stated_limit, steps_left, tokens
from videoatlas_standin.perception import Tile
from videoatlas_standin.policy import IMMEDIATE_S, SAME_SPAN_S, Sighting
from videoatlas_standin.relations import reference_points
from videoatlas_standin.spans import (
    Span,
    SpanField,
    denser_look,
    glimpses,
    looks_written,
    next_look,
    reports_use,
    span_field,
    stated_length,
)

COVERED_S = 2.5
"""Seconds between reports below which a stretch counts as seen (text-only planning then looks elsewhere)."""
_UNREAD = re.compile(r"too small|blurr|illegible|unreadable|can(?:no|')t (?:be )?read", re.IGNORECASE)
"""What a report says of text it saw but could not make out."""


_NEGATED = re.compile(r"\b(?:no|not|nothing|none|never|without)\b|n't\b", re.IGNORECASE)
"""A report that says something was not there."""
Resolve = Callable[[dict[str, Any]], dict[str, Any]]
Moved = tuple[dict[str, Any], SpanField, Span, int | None]
"""A variant of a reply schema, how it takes a stretch, the stretch it is sent to, and how many frames it takes
there (None: as it would; a number when a look goes back over a stretch only glimpsed: :func:`.spans.glimpses`)."""
_BOOKKEEPING = frozenset({"record", "flag", "stop", "back"})
"""What an action does that finds nothing new by itself (it files, marks, ends or goes back)."""


def _sense(intent: str) -> str:
    """The sense an action reaches the video through: hearing for listening, sight for every other."""
    return "hearing" if intent == "listen" else "sight"


class Actions(Answers):
    """Chooses the next step and its cells from what a :class:`.answers.Answers` judges."""

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

    def ranked_ids(self, values: list[int]) -> list[int]:
        """Ids to choose from, best first: cells bearing on the question, scored listed items, other cells."""
        ranked = self.ranked_cells()
        relevant = self._relevant(ranked)
        return relevant + self.scored_ids(values) + [c for c in ranked if c not in relevant]

    def _relevant(self, cells: list[int]) -> list[int]:
        """Those of ``cells`` whose tile bears on the question at all (relevance above 0), in their order."""
        return [c for c in cells if any(t.cell == c and self.req.relevance(t) > 0 for t in self.req.tiles)]

    def scored_ids(self, values: list[int]) -> list[int]:
        """The ids among ``values`` the text lists one to a line with a score, highest first (else as listed).

        "stretch 7: 01:00-02:00, score 0.82: ..." scores 7. None unless two or more are scored.
        """
        scores = {i: s for i, s in listed_scores(self.req.text).items() if i in values}
        return sorted(scores, key=lambda i: -scores[i]) if len(scores) >= 2 else []

    def cell_ids(
        self, lo: int, hi: int, items: dict[str, Any], suggest: bool = False, point: int | None = None
    ) -> list[int]:
        """Between ``lo`` and ``hi`` distinct ids: the relevant cells first, or only the cues for suggestions.

        With ``point`` (:func:`.relations.reference_field`), only the cells that show that reference point.
        """
        ranked = self.ranked_cells()
        useful: list[int | None]
        if point is not None:
            useful, ranked = list(self.reference_cells(point)), []  # no other cell shows the reference point
        elif self.focus is None and self.intent in ("open", "zoom", "around", "flag", "record", "stop", "back"):
            useful = [t.cell for t in self.targets()]  # an action's own cells (none to stop or go back)
        elif suggest:
            useful = [t.cell for t in self.req.grid_tiles() if self.req.is_anchor(t) and not self.req.is_evidence(t)]
        else:
            useful = list(self._relevant(ranked))
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

    def reference_cells(self, point: int) -> list[int]:
        """The cells that show reference point ``point`` of the question's time relation, in time order.

        A cell shows it when its text holds a word the question names that point with ("the REPLAY
        banner": REPLAY); a choice seen without it is not the point. None when the question states no such point.
        """
        phrases = reference_points(self.req.question)
        said = set(tokens(phrases[point])) if point < len(phrases) else set()
        words = [w for w in self.req.context if said and set(tokens(w)) <= said]
        shown = [t for t in self.req.tiles if t.cell is not None and not t.masked]
        shown = [t for t in shown if any(self.req.shows(t, w) for w in words)]
        return list(dict.fromkeys(t.cell for t in sorted(shown, key=lambda t: t.time or 0.0) if t.cell is not None))

    def choose_action(self, allowed: list[str]) -> str:
        """The action a careful searcher takes given what it sees, among ``allowed`` (by what each means)."""
        by_intent: dict[str, str] = {}
        for value in allowed:
            intent = intent_of(value, self._described(value))
            if intent is not None and intent not in by_intent:
                by_intent[intent] = value

        def pick(*intents: str) -> str | None:
            return next((by_intent[i] for i in intents if i in by_intent), None)

        if self.req.spoken and not self.sufficient() and not self.req.heard() and (listen := pick("listen")):
            return str(listen)  # asked what is said: listen before looking, unless the reports settle it
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
        if other := self.other_means(allowed):
            return other
        if (reach := self.anchor_reach(allowed)) is not None and (near := pick("zoom", "look")):
            self.span = reach  # right before (after) X, where no frame shown lies: look there before answering
            return near
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
        read: a closer look); for which comes first (last), the least-reported stretch before (after) the
        earliest (latest) choice reported, from the video's start (end); the least-reported stretch of all. A
        stretch is opened a piece at a time (at most twice what a close look covers); one reported
        every :data:`COVERED_S` seconds has been seen.
        """
        if self.sufficient() and (stop := pick("stop")):
            return str(stop)
        if other := self.other_means(allowed):
            return other  # what was tried found nothing: another sense before another look
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
        if (outer := self._beyond_ordered(noted, timed)) is not None:
            stretches.insert(0, outer)  # which comes first (last): what lies before (after) the earliest (latest) seen
        for marks in stretches:
            gaps = sorted(itertools.pairwise(marks), key=lambda pair: pair[0] - pair[1])
            for a, b in gaps:
                if b - a > COVERED_S and wider:
                    self.span = (a, min(b, a + 2 * close))
                    return str(wider)
        return str(pick("stop") or allowed[-1])

    def _beyond_ordered(self, noted: list[float], timed: list[Sighting]) -> list[float] | None:
        """For "which comes first (last)", the marks from the video's start (end) to the earliest (latest) choice seen.

        Only a choice shown before (after) every one reported can change the answer; the video's end
        counts when the text states its length.
        """
        seen = [(float(s.start), float(s.end or s.start)) for s in timed if s.choices and s.start is not None]
        if self.req.ordering is None or not seen:
            return None
        if self.req.ordering == "first":
            edge = min(a for a, _ in seen)
            return [0.0, *(x for x in noted if x < edge), edge]
        edge, length = max(b for _, b in seen), stated_length(self.req.text)
        return [edge, *(x for x in noted if x > edge), *([length] if length else [])]

    def tried(self, value: str) -> bool:
        """Whether the request shows ``value`` used already.

        It was called earlier, or its text names it other than where it is offered (``value: what it does``).
        """
        if value in self.called:
            return True
        return any(reports_use(value, line) for line in self.req.text.splitlines())

    def other_means(self, allowed: list[str]) -> str | None:
        """An untried means of another kind, when what was tried found nothing relevant and budget remains.

        A careful searcher does not answer without evidence while it can still find some: when the
        request offers several means (tools, or actions among a schema's choices), what has been
        tried (on the same sense: looking) showed nothing that bears on the question, and the request
        says steps remain, it uses a means that reaches another sense (listening) before it answers.
        """
        if self.sufficient() or self.answer_index() is not None or not budget_left(self.req.text):
            return None
        if any(self.req.relevance(t) >= 4 for t in self.req.tiles):
            return None  # a cue in view: the usual next step is to look closer there
        means: list[tuple[str, str]] = []
        for value in allowed:
            intent = intent_of(value, self._described(value))
            if intent is not None and intent not in _BOOKKEEPING:
                means.append((value, intent))
        tried = {_sense(i) for v, i in means if self.tried(v)}
        if not tried:
            return None  # nothing tried yet: the usual first step
        return next((v for v, i in means if _sense(i) not in tried and not self.tried(v)), None)

    def found_nothing(self) -> bool:
        """Whether what was looked at bears on nothing the question asks, unsettled, with steps left to take.

        No choice is backed, the request's budget is not spent (:func:`.language.budget_left`), no tile
        in view is relevant, and no line of its text reports a choice or the question's subject (one
        that says the subject was not there reports nothing). For a question placed against another
        moment ("right after X"), a choice seen where X was not bears on nothing: only X seen (in view,
        or reported at a time of the video), or a choice placed against it, does.
        """
        if not budget_left(self.req.text):
            return False
        placed = self.req.direction is not None
        if placed and any(s.gap is not None for s in self.sightings()):
            return False
        if not placed and self.answer_index() is not None:
            return False
        if any(self.req.relevance(t) >= (4 if placed else 2) for t in self.req.tiles):
            return False
        return not any(
            (s.choices and not placed)
            or (s.context and not _NEGATED.search(s.line) and not (placed and s.start is None))
            for s in self.req.written_sightings()
        )

    def search_on(self) -> bool:
        """Whether the next look goes where nobody looked: what was seen settles nothing yet, with steps left.

        Either it bears on nothing the question asks (:meth:`found_nothing`), or the question needs all of
        the video seen (:meth:`wide`) and is unsettled: one appearance of what is counted, or of one choice
        whose order is asked, settles nothing, since any part not looked at yet may hold another, so the
        search covers the video before it looks closer at what it found.
        """
        return self.found_nothing() or (self.wide() and budget_left(self.req.text) and not self.sufficient())

    def another_stretch(self, variants: list[tuple[dict[str, Any], str | None]], resolve: Resolve) -> Moved | None:
        """A variant of a reply schema's choice of actions that looks at a stretch nobody has looked at yet.

        ``variants`` are the choice's object schemas with the constant each is tagged with. When the text shows
        stretches looked at (:func:`.spans.looks_written`: ranges on lines that name a variant as used, the
        variant's values in earlier replies' JSON) that found nothing or did not settle a question that needs all of
        the video (:meth:`search_on`), and the video's length is known (the schema's bound on the times, or the
        text), a tagged variant that takes a stretch (:func:`.spans.span_field`) and does not reach another sense
        (listening) gets the next stretch no look covered, as wide as the last look or as the steps left need
        (:func:`.spans.next_look`); the variant tried before first. Once every part was looked at, a stretch the
        text reports only glimpsed (a few frames far apart: :func:`.spans.glimpses`) is looked at again, closely,
        with the most frames the variant takes (:func:`.spans.denser_look`). None once every part was seen closely.
        """
        if len(variants) < 2 or not self.search_on():
            return None
        tagged = [(o, t) for o, t in variants if t is not None and intent_of(t, self._described(t)) != "listen"]
        names = [t for _, t in tagged]
        for option, _ in sorted(tagged, key=lambda pair: not self.tried(pair[1])):
            field = span_field(option, resolve)
            if field is None:
                continue
            looks = looks_written(self.req.text, field, names)  # none yet: the usual first step
            length = field.length or stated_length(self.req.text)
            if not looks or not length:
                continue
            steps = steps_left(self.req.text)
            if (span := next_look(looks, [], length, steps)) is not None:
                return option, field, span, None
            frames = field.frames[1] if field.frames is not None else None  # a closer look takes the most it can
            if (span := denser_look(looks, glimpses(self.req.text, names), length, steps, frames)) is not None:
                return option, field, span, frames
        return None

    def _described(self, value: str) -> str:
        """The description the request gives of a value (a tool's own, else ``VALUE: what it does`` in its text)."""
        if self.told.get(value):
            return self.told[value]
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

    def anchor_reach(self, allowed: list[str]) -> tuple[float, float] | None:
        """For "right after (before) X" with X in view: the stretch right after (before) it, when nothing shows there.

        The stretch reaches :data:`.policy.IMMEDIATE_S` from the X shown last (first). None when a choice is in
        evidence, X is not in view, a frame shown lies inside that stretch (then it is judged as shown), or the
        text reports one of the ``allowed`` actions used on a stretch no longer than twice that, overlapping it
        (a close look was taken there: what it reported stands).
        """
        if self.req.direction is None or self.evidence_tiles():
            return None
        shown = [t for t in self.req.tiles if not t.masked and t.time is not None]
        cues = sorted(t.time for t in shown if t.time is not None and self.req.context_in(t))
        if not cues:
            return None
        x = cues[-1] if self.req.direction == "after" else cues[0]
        reach = (x, x + IMMEDIATE_S) if self.req.direction == "after" else (max(0.0, x - IMMEDIATE_S), x)
        if any(reach[0] + SAME_SPAN_S < t.time < reach[1] - SAME_SPAN_S for t in shown if t.time is not None):
            return None
        for line in self.req.text.splitlines():
            a, b = [*clock_times(line), 0.0, 0.0][:2]
            close = 0 < b - a <= 2 * IMMEDIATE_S and a < reach[1] and b > reach[0]
            if close and any(reports_use(v, line) for v in allowed):
                return None
        return reach

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
