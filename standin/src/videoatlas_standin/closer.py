"""A closer look where the question's subject is in view, for requests with no action that opens or flags.

A careful searcher that sees where the question's subject is (the frames of a chapter it names, a
place) but not what the question asks of it looks there more closely before it answers. A request
whose actions include opening or flagging a cue has its own way to do so (:meth:`.actions.Actions.choose_action`);
one that offers only looks over stretches of video (a survey of N frames, a close look at a clip)
gets that look sent to the subject's stretch, with as many frames as the look takes.
"""

from __future__ import annotations

import math
from typing import Any

from videoatlas_standin.actions import Actions, Moved, Resolve
from videoatlas_standin.language import budget_left, intent_of
from videoatlas_standin.spans import MIN_GAP_S, span_field, stated_length

CLOSER = 1.5
"""How many times closer than the frames in view a look must see the subject's stretch to be worth taking."""


class Closer(Actions):
    """Adds :meth:`subject_look` to what :class:`.actions.Actions` chooses."""

    stretch: Moved | None = None
    """A variant sent to a stretch of video: one no look covered yet, or where the subject is (:meth:`subject_look`)."""

    def subject_look(
        self, variants: list[tuple[dict[str, Any], str | None]], resolve: Resolve, wanted: str | None
    ) -> Moved | None:
        """A look sent to the stretch the tiles showing the question's subject stand for, instead of answering.

        ``variants``: a reply schema's choice of actions with the constant each is tagged with; ``wanted``: the
        one :meth:`choose_action` took. Only when that one stops or goes back, no variant opens or flags, nothing
        in view is evidence, the question is unsettled and the request says steps remain. The subject's
        stretch runs from the first tile showing it to the end of the last (across pictures: a cue where
        its picture changes is only the start of it); its frames in view lie more than
        :data:`.spans.MIN_GAP_S` apart. The look is a variant that takes a stretch and a number of frames
        (:func:`.spans.span_field`), not a listening one, the one tried before first, whose most frames
        see that stretch :data:`CLOSER` times closer than the frames in view. None when no look does.
        """
        tags = [t for _, t in variants if t is not None]
        intents = {t: intent_of(t, self._described(t)) for t in tags}
        if wanted is None or intents.get(wanted) not in ("stop", "back") or {"open", "flag"} & set(intents.values()):
            return None
        if self.evidence_tiles() or self.sufficient() or not budget_left(self.req.text):
            return None
        shown = [t for t in self.req.grid_tiles() if not t.masked and t.time is not None]
        spans = [self.req.span_of(t) for t in shown if self.req.context_in(t)]
        starts = [a for a, _ in spans if a is not None]
        if not starts:
            return None
        a, b = min(starts), max(e if e is not None else s for s, e in spans if s is not None)
        inside = sum(1 for t in shown if t.time is not None and a <= t.time <= b)
        apart = (b - a) / max(1, inside)
        if apart <= MIN_GAP_S:
            return None  # seen that closely already
        for option, tag in sorted(((o, t) for o, t in variants if t is not None), key=lambda p: not self.tried(p[1])):
            field = span_field(option, resolve)
            if intents[tag] == "listen" or field is None or field.frames is None:
                continue
            length = field.length or stated_length(self.req.text)
            end = math.floor(min(b, length) * 100) / 100 if length else b  # a tile's span may reach past the end
            if (end - a) / field.frames[1] * CLOSER <= apart:
                return option, field, (max(0.0, a), end), field.frames[1]
        return None
