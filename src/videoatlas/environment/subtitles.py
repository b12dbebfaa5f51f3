"""Subtitles: SRT, WebVTT and LongVideoBench JSON, with a time offset and interval lookup."""

from __future__ import annotations

import bisect
import html
import json
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from videoatlas.environment.files import check_subtitle_file
from videoatlas.environment.geometry import Interval
from videoatlas.errors import SubtitleError

_TS = r"(?:(\d+):)?(\d{1,2}):(\d{1,2})(?:[.,](\d{1,3}))?"
_CUE_TIMING = re.compile(rf"^\s*{_TS}\s*-->\s*{_TS}")
# LongVideoBench clock times: the official loader reads them as floats, so any number of decimals.
_LVB_TS = re.compile(r"(?:(\d+):)?(\d{1,2}):(\d{1,2}(?:\.\d+)?)")
_TAG = re.compile(r"<[^>]+>")


@dataclass(frozen=True, slots=True)
class SubtitleLine:
    """One cue: when it shows, in video seconds, and its plain text."""

    start: float
    end: float
    text: str


def _seconds(h: str | None, m: str, s: str, frac: str | None) -> float:
    value = int(h or 0) * 3600 + int(m) * 60 + int(s)
    if frac:
        value += int(frac) / (10 ** len(frac))
    return float(value)


def _clean(text: str) -> str:
    return html.unescape(_TAG.sub("", text)).strip()


def parse_srt_or_vtt(text: str, source: str) -> list[SubtitleLine]:
    """Cues from SRT or WebVTT text (both use ``start --> end`` timing lines)."""
    lines: list[SubtitleLine] = []
    body = text.lstrip("\ufeff")
    blocks = re.split(r"\r?\n\s*\r?\n", body)
    for block in blocks:
        rows = block.splitlines()
        for i, row in enumerate(rows):
            match = _CUE_TIMING.match(row)
            if match:
                g = match.groups()
                start = _seconds(g[0], g[1], g[2], g[3])
                end = _seconds(g[4], g[5], g[6], g[7])
                cue = _clean(" ".join(r.strip() for r in rows[i + 1 :] if r.strip()))
                if cue and end >= start:
                    lines.append(SubtitleLine(start, end, cue))
                break
    if not lines and body.strip():
        raise SubtitleError(f"{source}: no subtitle cues found (expected SRT or WebVTT 'start --> end' lines)")
    return lines


def _lvb_time(value: Any, source: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        match = _LVB_TS.fullmatch(value.strip())
        if match:
            h, m, sec = match.groups()
            return int(h or 0) * 3600 + int(m) * 60 + float(sec)
    raise SubtitleError(f"{source}: unreadable time {value!r} in LongVideoBench subtitles")


def _lvb_end(value: Any, start: float, duration: float | None, source: str) -> float:
    """A cue's end; a non-numeric one (``null``) lasts to the clip's end, as the official loader reads it."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if value is None or (isinstance(value, str) and not _LVB_TS.fullmatch(value.strip())):
        # The official loader puts the clip's duration there (on the subtitles' own clock).
        return max(duration, start) if duration is not None else start
    return _lvb_time(value, source)


def parse_lvb_json(text: str, source: str, duration: float | None = None) -> list[SubtitleLine]:
    """LongVideoBench subtitle JSON: ``{"timestamp": [s, e], "text"}`` or ``{"start", "end", "line"}``.

    ``duration``: the clip's length, the end of a cue whose end is not a number (without it, such
    a cue lasts no time past its start).
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SubtitleError(f"{source}: invalid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, list):
        raise SubtitleError(f"{source}: LongVideoBench subtitles must be a JSON list of cues")
    lines: list[SubtitleLine] = []
    for n, item in enumerate(data):
        if not isinstance(item, dict):
            raise SubtitleError(f"{source}: cue {n} is not an object")
        if "timestamp" in item:
            stamp = item["timestamp"]
            if not (isinstance(stamp, list) and len(stamp) == 2):
                raise SubtitleError(f"{source}: cue {n} timestamp must be [start, end]")
            start = _lvb_time(stamp[0], source)
            end = _lvb_end(stamp[1], start, duration, source)
            text_value = item.get("text", "")
        elif "start" in item and "end" in item:
            start = _lvb_time(item["start"], source)
            end = _lvb_end(item["end"], start, duration, source)
            text_value = item.get("line", item.get("text", ""))
        else:
            raise SubtitleError(f"{source}: cue {n} has neither 'timestamp' nor 'start'/'end'")
        cue = _clean(str(text_value))
        if cue and end >= start:
            lines.append(SubtitleLine(start, end, cue))
    return lines


class Subtitles:
    """Cues sorted by start, shifted by an offset, answering 'what is said during this interval?'."""

    def __init__(self, lines: Sequence[SubtitleLine], offset: float = 0.0) -> None:
        shifted = [SubtitleLine(ln.start + offset, ln.end + offset, ln.text) for ln in lines]
        self.lines = sorted(shifted, key=lambda ln: (ln.start, ln.end))
        self._starts = [ln.start for ln in self.lines]
        self._longest = max((ln.end - ln.start for ln in self.lines), default=0.0)

    def __len__(self) -> int:
        return len(self.lines)

    def overlapping(self, interval: Interval) -> list[SubtitleLine]:
        """Cues on screen at some moment of ``[start, end)``; for a zero-span interval, at that instant."""
        lo = bisect.bisect_left(self._starts, interval.start - self._longest)
        hi = bisect.bisect_right(self._starts, interval.end)
        out = []
        for ln in self.lines[lo:hi]:
            if interval.span == 0:
                if ln.start <= interval.start <= ln.end:
                    out.append(ln)
            elif ln.start < interval.end and ln.end > interval.start:
                out.append(ln)
        return out

    def by_cell(self, cells: Sequence[tuple[str, Interval]], max_chars: int = 1600, about: str = "") -> str:
        """What is said during each cell, one line per cell labelled with its id, within ``max_chars`` in all.

        Neighbouring cells during which the same lines are said share one line (``cell 3 to cell 9:
        ...``): a sentence that lasts longer than a cell is said once. The budget spans the whole
        view: it is shared among the lines, and one whose words do not fit shows its first and its
        last cue (what was said as the stretch began and as it ended) rather than only its beginning.

        ``about`` (a question and its choices): when some cell's words do not fit, the cues that bear
        on it (:func:`bearing`) are quoted whole in their cells first, up to half the budget, and the
        other cells share the rest. Without it, a fact said in the middle of a wide cell would be cut
        away for the routine said as the cell began and ended.
        """
        runs: list[tuple[str, str, list[SubtitleLine]]] = []
        for label, iv in cells:
            lines = self.overlapping(iv)
            if not lines:
                continue
            if runs and runs[-1][2] == lines:
                runs[-1] = (runs[-1][0], label, lines)
            else:
                runs.append((label, label, lines))
        if not runs:
            return ""
        joined = [" ".join(ln.text for ln in lines) for *_, lines in runs]
        share = max(40, max_chars // len(runs))
        quotes: dict[int, str] = {}
        if about and any(len(text) > share for text in joined):
            quotes = _bearing_quotes([lines for *_, lines in runs], about, max_chars // 2)
            if quotes and len(runs) > len(quotes):
                rest = max_chars - sum(len(q) for q in quotes.values())
                share = max(40, rest // (len(runs) - len(quotes)))
        out = []
        for n, (first, last, lines) in enumerate(runs):
            whole = quotes.get(n)
            if whole is None:
                whole = joined[n]
                if len(whole) > share and len(lines) > 1:
                    half = max(10, (share - 5) // 2)
                    whole = f"{_cut(lines[0].text, half)} … {_cut(lines[-1].text, half)}"
                whole = _cut(whole, share)
            label = first if first == last else f"{first} to {last}"
            out.append(f"{label}: {whole}")
        return "\n".join(out)

    def text_for(self, interval: Interval, max_chars: int = 400) -> str:
        """The overlapping cues joined, trimmed to ``max_chars``."""
        joined = " ".join(ln.text for ln in self.overlapping(interval))
        return joined if len(joined) <= max_chars else joined[: max_chars - 1].rstrip() + "…"


_WORD = re.compile(r"[^\W_]+")


def fitting_lines(
    lines: Sequence[SubtitleLine], about: str, max_chars: int, size: Callable[[SubtitleLine], int]
) -> list[SubtitleLine]:
    """The lines to quote within ``max_chars`` (``size`` each), in time order: all when they fit.

    When they do not, the lines that bear most on ``about`` (a question and its choices, by
    :func:`bearing`) are kept first, then the others spread evenly over time. A fact said once in an
    hour is kept over the routine said before it, which a cut in time order would keep instead.
    """
    if sum(size(ln) for ln in lines) <= max_chars:
        return list(lines)
    bears = bearing([ln.text for ln in lines], about)
    spread = _spread_order(len(lines))
    order = sorted(range(len(lines)), key=lambda i: (-bears[i], spread[i]))
    kept: list[int] = []
    used = 0
    for i in order:
        if used + size(lines[i]) <= max_chars:
            kept.append(i)
            used += size(lines[i])
    return [lines[i] for i in sorted(kept)]


def bearing(texts: Sequence[str], about: str, common: float = 1.0) -> list[float]:
    """How much each of ``texts`` bears on ``about``: the words it shares with it, each weighted by rarity.

    A word's weight is its inverse document frequency over ``texts``: a word every text says weighs
    nothing, a word one text says weighs most. A word more than ``common`` of the texts say weighs
    nothing either (1.0: only one every text says). 0 for a text that shares no weighed word with ``about``.
    """
    words = [set(_WORD.findall(t.lower())) for t in texts]
    asked = set(_WORD.findall(about.lower()))
    said_by: dict[str, int] = {}
    for seen in words:
        for word in seen & asked:
            said_by[word] = said_by.get(word, 0) + 1
    weight = {w: math.log(len(texts) / n) if n <= common * len(texts) else 0.0 for w, n in said_by.items()}
    return [sum(weight[w] for w in seen & asked) for seen in words]


def _bearing_quotes(runs: Sequence[Sequence[SubtitleLine]], about: str, max_chars: int) -> dict[int, str]:
    """For the runs (a cell's cues each) that hold cues bearing on ``about``, those cues quoted, within ``max_chars``.

    A cue bears when it shares with ``about`` a word that at most half of the view's cues say (so a
    word most of them say, "the" or what every announcement repeats, marks none). Runs are taken by
    their best cue's bearing, most first; a run's quote marks the cues left out around its own with an
    ellipsis. A cue said over several runs is weighed once.
    """
    cues = sorted({ln for lines in runs for ln in lines}, key=lambda ln: (ln.start, ln.end, ln.text))
    bears = dict(zip(cues, bearing([ln.text for ln in cues], about, common=0.5), strict=True))
    ranked = sorted(
        (n for n, lines in enumerate(runs) if any(bears[ln] > 0 for ln in lines)),
        key=lambda n: (-max(bears[ln] for ln in runs[n]), n),
    )
    quotes: dict[int, str] = {}
    used = 0
    for n in ranked:
        lines = runs[n]
        kept = [i for i, ln in enumerate(lines) if bears[ln] > 0]
        text = " … ".join(lines[i].text for i in kept)
        text = ("… " if kept[0] > 0 else "") + text + (" …" if kept[-1] < len(lines) - 1 else "")
        if used + len(text) > max_chars:
            continue
        quotes[n] = text
        used += len(text)
    return quotes


def _spread_order(n: int) -> list[int]:
    """For each of ``n`` positions, its rank in an order whose every prefix is spread evenly (bit reversal)."""
    bits = max(1, (n - 1).bit_length())
    reversed_ = sorted(range(n), key=lambda i: int(format(i, f"0{bits}b")[::-1], 2))
    rank = [0] * n
    for r, i in enumerate(reversed_):
        rank[i] = r
    return rank


def load_subtitles(path: str | os.PathLike[str], offset: float = 0.0, duration: float | None = None) -> Subtitles:
    """Read ``.srt``, ``.vtt`` or LongVideoBench ``.json`` subtitles, adding ``offset`` s to each cue.

    ``duration`` (seconds): where a LongVideoBench cue without a numeric end stops.
    """
    p = check_subtitle_file(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise SubtitleError(f"{p}: not UTF-8 text") from None
    except OSError as exc:
        raise SubtitleError(f"{p}: cannot read ({exc.strerror})") from None
    suffix = p.suffix.lower()
    if suffix == ".json":
        lines = parse_lvb_json(text, str(p), duration)
    elif suffix in (".srt", ".vtt"):
        if suffix == ".vtt" and not text.lstrip("\ufeff").startswith("WEBVTT"):
            raise SubtitleError(f"{p}: a WebVTT file must start with 'WEBVTT'")
        lines = parse_srt_or_vtt(text, str(p))
    else:
        raise SubtitleError(f"{p}: unsupported subtitle format {suffix or '(none)'}; use .srt, .vtt or .json")
    return Subtitles(lines, offset)


def srt_timestamp(seconds: float) -> str:
    """``3723.4567`` -> ``"01:02:03,457"`` (SRT's clock; negative times clamp to zero)."""
    ms = round(max(0.0, seconds) * 1000)
    h, rem = divmod(ms, 3_600_000)
    m, rem = divmod(rem, 60_000)
    s, ms = divmod(rem, 1000)
    return f"{h:02d}:{m:02d}:{s:02d},{ms:03d}"


def write_srt(path: str | os.PathLike[str], lines: Sequence[SubtitleLine]) -> None:
    """Write cues as an SRT file, numbered from 1 in the order given."""
    blocks = [
        f"{n}\n{srt_timestamp(ln.start)} --> {srt_timestamp(ln.end)}\n{ln.text}\n"
        for n, ln in enumerate(lines, start=1)
    ]
    Path(path).write_text("\n".join(blocks), encoding="utf-8")


def _cut(text: str, limit: int) -> str:
    """``text`` shortened to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: max(1, limit - 1)].rstrip() + "…"
