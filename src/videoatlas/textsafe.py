"""Text for a terminal: control characters and escape sequences shown escaped, never interpreted.

Questions, answers and model text come from users, datasets and models; written raw, an ANSI
escape could recolour or rewrite the terminal and a newline could forge a line of output. Every
terminal view (``runs``, ``trace``, ``ask``, progress lines, errors, console logs) writes through
:func:`escape`; JSON output is escaped by the JSON encoder and the HTML report by ``html.escape``.
"""

from __future__ import annotations

import unicodedata

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Directional formatting characters: they reorder what is shown ("Trojan Source")."""


def _escaped(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in _BIDI


def escape(text: str) -> str:
    r"""``text`` as one line with every control character written as an escape (``\x1b``, ``\n``, ``\u202e``)."""
    if text.isprintable():
        return text
    return "".join(_escaped(ch) if _unsafe(ch) else ch for ch in text)


def one_line(text: str) -> str:
    """The lines of ``text`` joined with `` | `` (a search task and its relation): one line to show, still escaped."""
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())


def escape_lines(text: str) -> str:
    """Each line of ``text`` escaped, the line breaks kept (for output that is several lines by design)."""
    return "\n".join(escape(line) for line in text.split("\n"))


def cut(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else cut at the last word boundary before that, with ``...``."""
    if len(text) <= limit:
        return text
    head = text[: max(1, limit - 3)]
    space = head.rfind(" ")
    if space >= limit // 2:
        head = head[:space]
    return head.rstrip(" ,;:.-") + "..."


def model_words(text: str, limit: int = 120) -> str:
    """The model's own words as a line shows them: on one line, cut at a word boundary, in quotes.

    So that a reason or a note the model wrote is never read as a message of ours (empty: nothing said).
    """
    said = one_line(text)
    return f'"{cut(said, limit)}"' if said else ""
