"""The scorer of open answers (questions without choices): normalised exact match, or number match.

The rule, stated once (docs/evals.md, "Scoring"):

* Both the reply and the truth are *normalised*: Unicode NFKC, case folded, quotes and surrounding
  punctuation removed, a leading article (``the``, ``a``, ``an``) dropped, runs of white space made
  one space, and a hyphen or dash between letters and digits kept as a hyphen (``QU-8424``).
* When the truth is a number (``3``, ``2.5``, ``1,200``) or a clock time (``1:02:03``, ``02:03``), the
  reply must be a number too: digits, an English number word from zero to twenty, or a clock time,
  optionally followed by one unit word (``3 times``, ``95 s``). It matches when it lies within the
  item's tolerance of the truth (clock times compare in seconds; the tolerance is 0 unless the item
  gives one).
* Otherwise the normalised reply must equal the normalised truth, or one of the truth's accepted
  forms (an item may list several, separated by ``|``).

A long reply that merely *contains* the value is wrong: the reply is asked to be the value itself, and a
substring rule would reward listing everything seen.
"""

from __future__ import annotations

import re
import unicodedata

ALTERNATIVES = "|"
"""Separates accepted forms of one truth (``"Red Star|red star badge"``)."""

_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
NUMBER_WORDS = {w: float(i) for i, w in enumerate(_WORDS)}
_ARTICLES = ("the ", "a ", "an ")
_QUOTES = "\"'`\u2018\u2019\u201c\u201d\u00ab\u00bb"
_NUMBER = re.compile(r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")
_CLOCK = re.compile(r"^(?:(\d+):)?(\d{1,2}):(\d{2}(?:\.\d+)?)$")


def normalise(text: str) -> str:
    """``text`` in the form open answers are compared in (see the module's rule)."""
    out = unicodedata.normalize("NFKC", text).casefold()
    out = re.sub(r"[\u2010-\u2015\u2212]", "-", out)  # typographic dashes read as a hyphen
    out = "".join(ch for ch in out if ch not in _QUOTES)
    out = re.sub(r"\s+", " ", out).strip()
    out = out.strip(" .,;:!?()[]{}")
    for article in _ARTICLES:
        if out.startswith(article) and len(out) > len(article):
            out = out[len(article) :]
            break
    return out.strip()


def as_number(text: str) -> float | None:
    """The number a normalised value *is* (digits, a number word, a clock time, with one unit word), else None."""
    parts = normalise(text).split(" ")
    if not parts or not parts[0] or len(parts) > 2:
        return None
    if len(parts) == 2 and not parts[1].isalpha():
        return None
    head = parts[0]
    if head in NUMBER_WORDS:
        return NUMBER_WORDS[head]
    if _NUMBER.match(head):
        return float(head.replace(",", ""))
    clock = _CLOCK.match(head)
    if clock:
        hours, minutes, seconds = clock.groups()
        return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
    return None


def open_match(reply: str, truth: str, tolerance: float = 0.0) -> bool:
    """Whether an open ``reply`` is the ``truth`` (any of its ``|``-separated forms) by the module's rule."""
    if not reply or not reply.strip():
        return False
    for form in truth.split(ALTERNATIVES):
        if not form.strip():
            continue
        wanted = as_number(form)
        if wanted is not None:
            got = as_number(reply)
            if got is not None and abs(got - wanted) <= tolerance:
                return True
            continue
        if normalise(reply) == normalise(form):
            return True
    return False
