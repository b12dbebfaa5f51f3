"""What a request's text says each member of an enum is for, and which member a question's reach fits.

A prompt may explain the values it offers, one sentence a value ('Use "x" when ...'). A member that
a sentence names in quotes, a sentence naming no other member, is described by it. The reach of a
description is how many moments of a video it speaks of: words of plurality and spread ("many",
"across", "counting") count for, words of one place ("one", "single", "localized") against. A
question that needs the whole video seen takes the member of widest reach, any other question the
narrowest. Members the text does not describe, or describes with the same reach, decide nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

WIDE = frozenset(
    """
    many several multiple numerous all every across whole entire overall broad broadly wide widely
    spread breadth count counts counting tally order ordering sequence sequences series compare comparing
    """.split()  # noqa: SIM905 - a word list reads best as text
)
"""Words that say a description speaks of many moments, or of the video at large."""
NARROW = frozenset(
    """
    one single sole localized localised local specific particular detail details precise exact pinpoint narrow
    deep depth focused isolated
    """.split()  # noqa: SIM905 - a word list reads best as text
)
"""Words that say a description speaks of one moment or one place."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def descriptions(members: Sequence[str], text: str) -> dict[int, str]:
    """The sentences of ``text`` that name one member only, in quotes, by the member's index."""
    quoted = [re.compile(rf"[\"'“‘]{re.escape(m)}[\"'”’]", re.IGNORECASE) for m in members]
    found: dict[int, str] = {}
    for sentence in _SENTENCE.split(text):
        named = [i for i, pattern in enumerate(quoted) if pattern.search(sentence)]
        if len(named) == 1:
            found[named[0]] = f"{found.get(named[0], '')} {sentence}".strip()
    return found


def reach(description: str) -> int:
    """How widely a description ranges: its words of spread less its words of one place."""
    words = re.findall(r"[a-z]+", description.lower())
    return sum(w in WIDE for w in words) - sum(w in NARROW for w in words)


def member_by_reach(members: Sequence[str], text: str, wide: bool) -> int | None:
    """The index of the member whose description fits a question's reach (None: the text does not tell)."""
    reaches = {i: reach(d) for i, d in descriptions(members, text).items()}
    if len(set(reaches.values())) < 2:
        return None
    return max(reaches, key=lambda i: (reaches[i] if wide else -reaches[i], -i))
