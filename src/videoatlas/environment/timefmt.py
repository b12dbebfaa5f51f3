"""Parsing and formatting of times and durations as users type and read them."""

from __future__ import annotations

import math
import re

from videoatlas.errors import BadInputError

_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_UNIT_RE = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_time(text: str) -> float:
    """Seconds from ``"90"``, ``"90.5"``, ``"1:30"``, ``"01:02:03.5"``, ``"1h30m"`` or ``"45s"``."""
    raw = text.strip().lower()
    if not raw:
        raise BadInputError("empty time value")
    try:
        if ":" in raw:
            parts = [float(p) for p in raw.split(":")]
            if len(parts) > 3 or any(p < 0 for p in parts):
                raise ValueError(raw)
            if any(p >= 60 for p in parts[1:]):
                # "1:99" is not 2:39: a clock's minutes and seconds stop at 59.
                raise BadInputError(f"cannot read {text!r} as a clock time: minutes and seconds must be below 60")
            seconds = 0.0
            for part in parts:
                seconds = seconds * 60 + part
            return _finite(seconds, text)
        return _finite(float(raw), text)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for match in _UNIT_RE.finditer(raw):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if pos != len(raw) or pos == 0:
        raise BadInputError(f"cannot read {text!r} as a time (try 90, 1:30, 01:02:03.5 or 1h30m)")
    return _finite(total, text)


def _finite(value: float, text: str) -> float:
    if not math.isfinite(value) or value < 0:
        raise BadInputError(f"time {text!r} must be a finite, non-negative number of seconds")
    return value


def parse_range(text: str) -> tuple[float, float]:
    """``"S-E"`` into seconds, each side read by :func:`parse_time` (``"1:00-1:30"``)."""
    if "-" not in text:
        raise BadInputError(f"range {text!r} must look like START-END, e.g. 60-90 or 1:00-1:30")
    left, _, right = text.partition("-")
    start, end = parse_time(left), parse_time(right)
    if end <= start:
        raise BadInputError(f"range {text!r} ends before it starts")
    return start, end


def format_ts(seconds: float, decimals: int = 1) -> str:
    """``3723.46`` -> ``"1:02:03.5"``; under an hour ``"02:03.5"``."""
    if decimals < 0:
        raise ValueError("decimals must be >= 0")
    scale = 10**decimals
    ticks = round(max(0.0, seconds) * scale)
    whole, frac = divmod(ticks, scale)
    hours, rem = divmod(whole, 3600)
    minutes, secs = divmod(rem, 60)
    tail = f".{frac:0{decimals}d}" if decimals else ""
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}{tail}"
    return f"{minutes:02d}:{secs:02d}{tail}"


def format_moment(seconds: float) -> str:
    """A moment as both clock time and seconds (``01:45.0 (105.0 s)``), so a model or a reader takes either."""
    return f"{format_ts(seconds, 1)} ({seconds:.1f} s)"
