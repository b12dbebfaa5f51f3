"""Which stretch of a video a request has not looked at yet, read from its tools, its calls and their results.

A function that looks at a stretch of video says so in its parameters: two numbers whose names mean
where the stretch starts and ends (``start``/``end``, ``from``/``to``, ``begin``/``until``), or numbers
its schema describes as times. The conversation says what was covered: the stretches earlier calls
asked for (their arguments) and the ones their results report ("frames 0-60 s"). How long the video
is comes from the same request: the schema's bound on those numbers, or the text ("a 600 s video",
"duration: 10:00"). From these, :func:`uncovered` finds the next stretch nobody has looked at, the
width of the last look, or wider when the steps left could not cover the rest at that width, as a
careful searcher moves on when a look found nothing (:func:`next_look`).
A reply schema takes a stretch the same way, or as an array of them (``ranges: [{start, end}]``,
``clips: [[a, b]]``): :func:`span_field` says where, :func:`placed` puts the stretch there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from videoatlas_standin.language import parse_time, time_spans, words_of

_STARTS = frozenset({"start", "begin", "beginning", "from", "since", "t0", "first"})
_ENDS = frozenset({"end", "stop", "to", "until", "till", "t1", "last", "finish"})
_TIMELY = frozenset({"second", "seconds", "time", "timestamp", "sec", "secs", "s", "offset"})
"""Words a number's name or description uses when the number is a moment of the video."""
Span = tuple[float, float]
MIN_GAP_S = 2.5
"""A stretch left between two looks shorter than this is not worth a look of its own."""

_UNIT = r"(?:s|sec|secs|seconds?|min|mins|minutes?|h|hours?)"
_AMOUNT = rf"(?:\d{{1,2}}:)?\d{{1,2}}:\d{{2}}(?:\.\d+)?|\d+(?:\.\d+)?[\s-]*{_UNIT}\b"
_LENGTH = re.compile(
    rf"(?P<a>{_AMOUNT})[\s-]*(?:long\b|video\b|clip\b|footage\b|recording\b|film\b)"
    rf"|\b(?:duration|length|lasts|runs\s+for)\s*(?:is|of|:|=)?\s*(?P<b>{_AMOUNT})",
    re.IGNORECASE,
)


def _seconds(amount: str) -> float:
    """``"600 s"``, ``"10-minute"``, ``"1 h"`` or ``"10:00"`` in seconds."""
    unit = re.search(r"[a-z]+\s*$", amount.lower())
    number = re.sub(r"[a-zA-Z\s-]+$", "", amount.strip())
    value = parse_time(number)
    word = unit.group(0).strip() if unit else "s"
    if word.startswith("h"):
        return value * 3600
    if word.startswith("m"):
        return value * 60
    return value


def stated_length(text: str) -> float | None:
    """How long the text says the video is ("a 600 s video", "10 minutes long", "duration: 10:00"), if it says.

    The longest such length: a clip the text mentions is part of the video, never longer than it.
    """
    lengths = [_seconds(m.group("a") or m.group("b")) for m in _LENGTH.finditer(text)]
    return max((s for s in lengths if s > 0), default=None)


def _number(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    kinds = set(kind) if isinstance(kind, list) else {kind}
    return bool(kinds & {"number", "integer"})


def span_keys(parameters: dict[str, Any]) -> tuple[str, str] | None:
    """The arguments a function takes a stretch of video by: (where it starts, where it ends), if it takes one.

    Two numbers, one named for a start and one for an end (``start``/``end``, ``from_s``/``to_s``);
    or, when the names do not say, the first two numbers the schema describes as times.
    """
    props = parameters.get("properties") or {}
    numbers = {k: v for k, v in props.items() if isinstance(v, dict) and _number(v)}
    starts = [k for k in numbers if _STARTS & set(words_of(k))]
    ends = [k for k in numbers if _ENDS & set(words_of(k)) and k not in starts]
    if starts and ends:
        return starts[0], ends[0]
    timed = [k for k, v in numbers.items() if _TIMELY & set(words_of(f"{k} {v.get('description', '')}"))]
    return (timed[0], timed[1]) if len(timed) >= 2 else None


def schema_length(parameters: dict[str, Any], keys: tuple[str, str]) -> float | None:
    """The video's length as the schema bounds the stretch's numbers (their ``maximum``), if it does."""
    props = parameters.get("properties") or {}
    bounds = [props[k].get("maximum", props[k].get("exclusiveMaximum")) for k in keys if isinstance(props.get(k), dict)]
    known = [float(b) for b in bounds if isinstance(b, int | float)]
    return max(known) if known else None


def merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """``spans`` sorted and joined where they touch or overlap (a gap under :data:`MIN_GAP_S` joins too)."""
    out: list[tuple[float, float]] = []
    for a, b in sorted((min(a, b), max(a, b)) for a, b in spans):
        if out and a - out[-1][1] < MIN_GAP_S:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _seen(covered: list[tuple[float, float]], length: float) -> list[tuple[float, float]]:
    """The parts of a video of ``length`` seconds that ``covered`` looked at, clipped to it and merged."""
    return merged([(max(0.0, a), min(length, b)) for a, b in covered if b > 0 and a < length])


def uncovered(
    covered: list[tuple[float, float]], length: float, width: float, after: float
) -> tuple[float, float] | None:
    """The next stretch of ``width`` seconds that no look has covered in a video of ``length`` seconds.

    The first gap that starts at or after ``after`` (where the last look ended: a searcher moves on),
    else the earliest gap; None when every part of the video was looked at.
    """
    seen = _seen(covered, length)
    gaps: list[tuple[float, float]] = []
    edge = 0.0
    for a, b in seen:
        if a - edge >= MIN_GAP_S:
            gaps.append((edge, a))
        edge = max(edge, b)
    if length - edge >= MIN_GAP_S:
        gaps.append((edge, length))
    if not gaps:
        return None
    a, b = next((g for g in gaps if g[0] >= after - MIN_GAP_S), gaps[0])
    return a, min(b, a + max(width, MIN_GAP_S))


def next_look(
    looks: list[tuple[float, float]], reported: list[tuple[float, float]], length: float, steps: int | None = None
) -> Span | None:
    """Where a searcher looks next when the looks so far found nothing: :func:`uncovered`, as wide as the last look.

    ``looks`` are the stretches asked for, in order; ``reported`` the ones results say they covered
    (their widest sets the width when nothing was asked for by number). With ``steps`` left to look
    (the request's budget), the look is at least wide enough that what is left is covered in them.
    """
    width = (looks[-1][1] - looks[-1][0]) if looks else max((b - a for a, b in reported), default=length / 10)
    if steps:
        seen = sum(b - a for a, b in _seen(looks + reported, length))
        width = max(width, (length - seen) / steps)
    return uncovered(looks + reported, length, width, looks[-1][1] if looks else 0.0)


Glimpse = tuple[Span, int]
"""A look that took so few frames over its stretch that they lie more than :data:`MIN_GAP_S` apart, and that count."""
_FRAMES = re.compile(r"\b(\d+)\s+(?:frames?|images?|stills?|snapshots?|thumbnails?)\b", re.IGNORECASE)


def glimpses(text: str, names: list[str]) -> list[Glimpse]:
    """Looks the text reports with how many frames they took, where those frames lie far apart.

    A line that names one of ``names`` as used and states a count of frames ("scene_snapper on
    00:00-10:00, 30 frames") saw moments its stretch's length over that count apart: what lasts
    less than that may lie between them. Only looks whose frames are more than :data:`MIN_GAP_S`
    apart are returned; a look that states no count counts as seen whole (:func:`looks_written`).
    """
    found: list[Glimpse] = []
    for line in text.splitlines():
        count = _FRAMES.search(line)
        if count is None or int(count.group(1)) < 1 or not any(reports_use(n, line) for n in names):
            continue
        n = int(count.group(1))
        found += [((a, b), n) for a, b in time_spans(line) if (b - a) / n > MIN_GAP_S]
    return found


def denser_look(
    covered: list[Span], glimpsed: list[Glimpse], length: float, steps: int | None, frames: int | None
) -> Span | None:
    """The next stretch not yet seen closely, once every part was looked at, some only through frames far apart.

    For when :func:`next_look` has none and some looks were ``glimpsed``: a careful searcher that
    found nothing in glimpses looks again, closer, in turn from the start. The look takes ``frames``
    frames (else as many as the fewest a glimpse took) :data:`MIN_GAP_S` apart, or further apart when
    the ``steps`` left could not cover what is left that closely; a look of ``covered`` whose frames
    were at least that close has been seen closely, and the next look starts after the last such one.
    None when no glimpse was reported or every part was seen closely.
    """
    if not glimpsed:
        return None
    apart = {span: (span[1] - span[0]) / count for span, count in glimpsed}
    n = frames or min(count for _, count in glimpsed)
    step = MIN_GAP_S
    for _ in range(2):  # what counts as seen closely depends on the step, and the step on what is left
        close = [s for s in covered if apart.get(s, 0.0) <= step * 1.05]
        seen = sum(b - a for a, b in _seen(close, length))
        step = max(MIN_GAP_S, (length - seen) / (steps * n)) if steps else MIN_GAP_S
    close = [s for s in covered if apart.get(s, 0.0) <= step * 1.05]
    return uncovered(close, length, n * step, close[-1][1] if close else 0.0)


_STRETCHES = frozenset(
    {"range", "ranges", "span", "spans", "stretch", "stretches", "segment", "segments", "interval", "intervals"}
    | {"window", "windows", "clip", "clips", "period", "periods", "part", "parts", "section", "sections"}
)
"""Words a field's name or description uses when it holds stretches of a video."""


@dataclass(frozen=True, slots=True)
class SpanField:
    """Where an object takes a stretch of video: two numbers of its own, or an array of stretches.

    ``array`` names the array (None: the object's own ``ends``); its items are objects with ``ends``
    or, when ``ends`` is None, pairs of numbers ``[start, end]``.
    """

    array: str | None
    ends: tuple[str, str] | None
    length: float | None
    """The video's length as the schema bounds the times, if it does."""
    integer: bool
    frames: tuple[str, int] | None = None
    """The number the object also takes for how many frames its look takes, and the most it allows."""


def span_field(node: dict[str, Any], resolve: Callable[[dict[str, Any]], dict[str, Any]]) -> SpanField | None:
    """How the object ``node`` takes a stretch of video (:class:`SpanField`), if it takes one.

    Two numbers named or described as a start and an end (:func:`span_keys`); else an array whose
    items are such objects, or an array whose name or description says it holds stretches
    (``ranges``, ``clips``, ``segments``) and whose items are two numbers.
    """
    props = {k: resolve(v) for k, v in (node.get("properties") or {}).items() if isinstance(v, dict)}
    frames = _frames_field(props)
    if (ends := span_keys({"properties": props})) is not None:
        return SpanField(None, ends, schema_length({"properties": props}, ends), _integer(props[ends[0]]), frames)
    for key, sub in props.items():
        if sub.get("type") != "array":
            continue
        items = resolve(sub.get("items") or {})
        inner = {k: resolve(v) for k, v in (items.get("properties") or {}).items() if isinstance(v, dict)}
        if (ends := span_keys({"properties": inner})) is not None:
            return SpanField(key, ends, schema_length({"properties": inner}, ends), _integer(inner[ends[0]]), frames)
        first = items.get("items") or (items.get("prefixItems") or [{}])[0]
        number = resolve(first) if items.get("type") == "array" and isinstance(first, dict) else {}
        pair = int(items.get("minItems", 0)) <= 2 <= int(items.get("maxItems", 2)) and _number(number)
        if pair and _STRETCHES & set(words_of(f"{key} {sub.get('description', '')}")):
            bound = number.get("maximum", number.get("exclusiveMaximum"))
            length = float(bound) if isinstance(bound, int | float) else None
            return SpanField(key, None, length, _integer(number), frames)
    return None


_HOW_MANY = frozenset({"frames", "frame", "images", "stills", "snapshots", "samples"})
"""Words an integer's name uses when it says how many frames a look takes (``num_frames``, ``n_images``)."""


def _frames_field(props: dict[str, dict[str, Any]]) -> tuple[str, int] | None:
    """An integer argument named for how many frames a look takes, with the most it allows (its enum or maximum)."""
    for key, prop in props.items():
        if not _integer(prop) or not _HOW_MANY & set(words_of(key)):
            continue
        members = [v for v in prop.get("enum") or [] if isinstance(v, int) and not isinstance(v, bool)]
        most = max(members) if members else prop.get("maximum")
        if isinstance(most, int) and most >= 1:
            return key, most
    return None


def _integer(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return "integer" in (kind if isinstance(kind, list) else [kind])


def placed(value: dict[str, Any], field: SpanField, span: Span, frames: int | None = None) -> dict[str, Any]:
    """``value`` (an object the schema of ``field`` fills) sent to ``span``: its times, or its one stretch.

    ``frames``: how many frames the look takes there, when ``field`` takes a number for that.
    """
    if frames is not None and field.frames is not None:
        value = value | {field.frames[0]: frames}
    a, b = (round(t) if field.integer else round(t, 2) for t in span)
    if field.array is None and field.ends is not None:
        return value | {field.ends[0]: a, field.ends[1]: b}
    assert field.array is not None
    if field.ends is None:
        return value | {field.array: [[a, b]]}
    first = value.get(field.array) or [{}]
    item = first[0] if isinstance(first[0], dict) else {}
    return value | {field.array: [item | {field.ends[0]: a, field.ends[1]: b}]}


def reports_use(value: str, line: str) -> bool:
    """Whether ``line`` names ``value`` as something used, not where it is offered (``value: what it does``)."""
    named = re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", line)
    return bool(named) and not re.match(rf"^\s*[-*]?\s*{re.escape(value)}\s*[:=(-]", line)


_NUM = r"-?\d+(?:\.\d+)?"


def looks_written(text: str, field: SpanField, names: list[str]) -> list[Span]:
    """The stretches a conversation shows were looked at, in the order it shows them.

    The ranges a line writes when it names one of ``names`` as used (:func:`reports_use`: "turn 1:
    skim 35-51 s"), and the values of ``field`` in the JSON it holds (an earlier reply's
    ``"from_s": 0, "to_s": 60``, ``"clips": [[0, 60]]``).
    """
    found: list[tuple[int, Span]] = []
    at = 0
    for line in text.splitlines(keepends=True):
        if any(reports_use(n, line) for n in names):
            found += [(at, s) for s in time_spans(line) if s[1] > s[0]]
        at += len(line)
    if field.ends is not None:
        a, b = (re.escape(k) for k in field.ends)
        for first, second, flip in ((a, b, False), (b, a, True)):
            pattern = rf'"{first}"\s*:\s*(?P<x>{_NUM})[^{{}}]*?"{second}"\s*:\s*(?P<y>{_NUM})'
            for m in re.finditer(pattern, text):
                x, y = float(m.group("x")), float(m.group("y"))
                found.append((m.start(), (y, x) if flip else (x, y)))
    if field.array is not None and field.ends is None:
        pair = rf"\[\s*({_NUM})\s*,\s*({_NUM})\s*\]"
        for m in re.finditer(rf'"{re.escape(field.array)}"\s*:\s*\[(?P<body>(?:\s*{pair}\s*,?)*)\s*\]', text):
            found += [(m.start(), (float(x), float(y))) for x, y in re.findall(pair, m.group("body"))]
    return [s for _, s in sorted(found) if s[1] > s[0]]


def tag_of(option: dict[str, Any], resolve: Callable[[dict[str, Any]], dict[str, Any]]) -> str | None:
    """The string constant an object variant of a union is tagged with (``{"tool": {"const": "look"}}``), if any."""
    for prop in (option.get("properties") or {}).values():
        const = resolve(prop).get("const") if isinstance(prop, dict) else None
        if isinstance(const, str):
            return const
    return None
