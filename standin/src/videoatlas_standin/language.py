"""How the stand-in VLM reads the words of a request: the question, its choices, times, field meanings.

Everything here is ordinary English handling that any request could need: a list of function
words, the usual ways a question and its answer options are written (labelled lines, an inline
"Options:" list, an enum in the reply schema), time mentions in seconds or clock form, and a
small lexicon of what verbs and field names usually mean (record, open, go back, stop...). It
knows nothing of any particular video, prompt or agent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Function words and the verbs every question about a picture uses; they never name what to look for.
FUNCTION_WORDS = frozenset(
    """
    a an the this that these those there here it its it's they them their he she his her we our you your
    i me my is are was were be been being am do does did doing done has have had having will would shall
    should can could may might must of in on at by for with about against between into through during
    before after above below to from up down out off over under again further then once and but or nor
    not no yes so than too very just also only own same such both each few more most other some any all
    what which who whom whose when where why how whether if while as until because since though although
    one ones many much several either neither every per via onto upon within without across along among
    around behind beyond near next right left just immediately directly shortly soon later earlier first
    last latest earliest then following followed preceding previous prior
    video videos clip clips film footage frame frames image images picture pictures screen scene scenes
    shown shows showing appear appears appeared appearing visible seen see sees displayed display
    displays written read reads moment moments part parts happen happens happened times
    question answer answers choice choices option options select choose pick correct true false
    """.split()  # noqa: SIM905 - a word list reads best as text
)
COUNT_PATTERN = re.compile(r"\bhow\s+(?:many|often)\b|\bnumber\s+of\b|\bcount\b", re.IGNORECASE)
ORDER_FIRST = re.compile(r"\b(?:first|earliest|earlier|sooner|comes?\s+first|in\s+what\s+order)\b", re.IGNORECASE)
ORDER_LAST = re.compile(r"\b(?:last|latest|later|comes?\s+last)\b", re.IGNORECASE)
AFTER = re.compile(r"\b(?:after|following|followed|next|then|subsequent(?:ly)?)\b", re.IGNORECASE)
BEFORE = re.compile(r"\b(?:before|preceding|precedes|preceded|prior\s+to|previous|leading\s+up\s+to)\b", re.IGNORECASE)

DESCRIBE = re.compile(
    r"\b(?:describe[sd]?|description|summari[sz]e|summary|explain|what\s+(?:is\s+)?happen(?:s|ed|ing)?|"
    r"what\s+is\s+going\s+on)\b",
    re.IGNORECASE,
)
"""A question that asks for a description, not a value."""
WHEN = re.compile(
    r"^\s*when\b|\bat\s+what\s+(?:time|point|moment|second|minute)\b|\b(?:what|which)\s+timestamp\b",
    re.IGNORECASE,
)
"""A question that asks at what time of the video something is seen."""
VALUE = re.compile(r"\b(?:what|which|who|whose|where)\b", re.IGNORECASE)
"""A question that asks for a thing: a name, a code, a number, a word as shown."""
OCCURRENCES = re.compile(r"\b(?:times|how\s+often|occurrences?|appearances?|separate(?:ly)?)\b", re.IGNORECASE)
"""A count of how often something is seen (not a number printed beside it)."""
NUMBER_ASKED = re.compile(r"\b(?:number|numbers|digits?|numeric|numerals?)\b", re.IGNORECASE)
"""A question whose value is written with digits."""


def asked_kind(question: str) -> str:
    """What a question without choices asks for: ``count``, ``describe``, ``time``, ``value``, else ``other``."""
    if COUNT_PATTERN.search(question):
        return "count"
    if DESCRIBE.search(question):
        return "describe"
    if WHEN.search(question):
        return "time"
    return "value" if VALUE.search(question) else "other"


SPOKEN = re.compile(
    r"\b(?:say|says|said|saying|hear|hears|heard|speak|speaks|spoke|spoken|announce[sd]?|"
    r"mention(?:s|ed)?|tell|tells|told|narrat\w*|voice)\b",
    re.IGNORECASE,
)
"""A question about what is said, not what is shown."""
QUOTED = re.compile(r"[\"“][^\"”]+[\"”]")
LABELLED_CHOICE = re.compile(r"^\s*(?:[-*]\s*)?\(?([A-Ja-j]|\d{1,2})\)?[.):]\s+(.+?)\s*$")
_INLINE_CHOICES = re.compile(r"\b(?:options|choices|candidates|answers)\s*(?:are)?\s*[:=]\s*(.+)$", re.IGNORECASE)
_INLINE_LETTERED = re.compile(r"\(([A-Ja-j])\)\s*([^()]+?)(?=\s*\([A-Ja-j]\)|$)")
_QUESTION_LABEL = re.compile(r"^\s*(?:question|query|q)\s*[:=]\s*[\"“]?(.+?)[\"”]?\s*$", re.IGNORECASE)
_CLOCK = r"(?:\d{1,2}:)?\d{1,2}:\d{2}(?:\.\d+)?"
_SECONDS = r"\d+(?:\.\d+)?\s*(?:s|sec|secs|seconds?)\b"
_RANGE = re.compile(
    rf"(?P<a>{_CLOCK}|\d+(?:\.\d+)?)\s*(?:s|sec|seconds)?\s*(?:-|–|to|until)\s*(?P<b>{_CLOCK}|{_SECONDS})",
    re.IGNORECASE,
)
_POINT = re.compile(rf"(?P<t>{_CLOCK}|{_SECONDS})", re.IGNORECASE)
_PERCENT_SEARCHED = re.compile(
    r"(\d+(?:\.\d+)?)\s*%\s*(?:of\s+(?:the\s+)?(?:video|footage|clip|film)\s+)?"
    r"(?:\w+\s+){0,3}?(?:covered|searched|explored|seen|viewed|examined|watched)",
    re.IGNORECASE,
)

_SEARCH_VERB = (
    r"(?:look(?:s|ed|ing)?|search(?:es|ed|ing)?|seek(?:s|ing)?|sought|scan(?:s|ned|ning)?|hunt(?:s|ed|ing)?|"
    r"listen(?:s|ed|ing)?|skim(?:s|med|ming)?)"
)
SOUGHT = re.compile(
    r"\b(?:for|quer(?:y|ies|ied))\s*[:=]?\s*[\"“][^\"”]*[\"”]"
    rf"|\b{_SEARCH_VERB}\s+for\b.*?"
    r"(?=[.;!?()\[\]\n\"“”]|\b(?:but|found|finds|saw|sees|seen|shows?|showed|showing|reads?|reading)\b|$)",
    re.IGNORECASE,
)
"""What a line says was searched for: a quoted query (``for "..."``, ``query: "..."``) or the object of a
search verb (``looking for the red sign``), up to where the clause ends or goes on to what was found."""


def unsought(line: str) -> str:
    """``line`` without what it says was searched for: a search names what it hopes to see, not a sighting."""
    return SOUGHT.sub(" ", line)


# What a verb, an enum value or a field name usually means, by the words it is made of.
INTENTS: dict[str, tuple[str, ...]] = {
    "record": ("add", "record", "save", "note", "collect", "keep", "store", "log", "remember"),
    "stop": ("finish", "finished", "done", "stop", "end", "complete", "quit", "nothing"),
    "open": ("expand", "open", "drill", "descend", "enter", "subdivide", "dive", "split", "refine", "finer"),
    "back": ("back", "return", "parent", "ascend", "undo", "up"),
    "zoom": ("zoom", "magnify", "enlarge", "closeup", "resolution", "inspect", "detail"),
    "around": ("around", "neighbour", "neighbor", "surrounding", "adjacent", "before", "after", "preceding"),
    "flag": ("mark", "flag", "later", "queue", "defer", "bookmark", "candidate"),
    "look": ("overview", "survey", "glance", "scan", "browse", "sweep"),
    "listen": ("listen", "transcribe", "transcript", "hear", "audio", "speech"),
}


def norm(text: str) -> str:
    """Upper-case letters and digits only, with the letters OCR mistakes for digits folded into them."""
    return re.sub(r"[^A-Z0-9]", "", text.upper()).replace("O", "0").replace("I", "1").replace("L", "1")


def tokens(text: str) -> list[str]:
    """Normalised words of ``text`` (see :func:`norm`), in order."""
    return [n for n in (norm(w) for w in re.split(r"[^A-Za-z0-9]+", text)) if n]


_JOINED = re.compile(r"[A-Za-z]+|[0-9]+")


def word_parts(word: str) -> list[str]:
    """A run of letters then digits, or digits then letters, as its two parts; any other word as itself.

    A text reader often drops the narrow space between a word and the number beside it ("GATE 27"
    read as ``GATE27``): both parts are words that were written.
    """
    parts = _JOINED.findall(word)
    return parts if len(parts) == 2 and "".join(parts) == word else [word]


def read_words(text: str) -> set[str]:
    """The normalised words of text read in a picture: its words, and the parts of a word run into a number."""
    raw = [w for w in re.split(r"[^A-Za-z0-9]+", text) if w]
    return set(tokens(text)) | {n for w in raw for n in (norm(p) for p in word_parts(w)) if n}


def words_of(name: str) -> list[str]:
    """The lower-case words an identifier or enum value is made of (``cell_ids`` -> cell, ids)."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w]


def intent_of(name: str, description: str = "") -> str | None:
    """What an action-like value means (``record``, ``stop``, ``open``...).

    The request's own description of the value decides first (its first word with a known meaning:
    "go back to ...", "see ... at full resolution"); the value's name only when there is none.
    """
    for source in (words_of(description), words_of(name)):
        for word in source:
            for intent, cues in INTENTS.items():
                if word in cues or any(word.startswith(cue) and len(cue) >= 4 for cue in cues):
                    return intent
    return None


def content_words(text: str) -> list[str]:
    """The words of ``text`` that name something (function words and very short words dropped), in order."""
    out: list[str] = []
    for word in re.findall(r"[A-Za-z0-9][A-Za-z0-9'-]*", text):
        plain = word.strip("'-").lower()
        short = len(plain) < 3 and not (len(plain) == 2 and any(ch.isdigit() for ch in plain))
        if short or plain in FUNCTION_WORDS or (plain.endswith("'s") and plain[:-2] in FUNCTION_WORDS):
            continue
        if plain not in (w.lower() for w in out):
            out.append(word.strip("'-"))
    return out


def find_question(texts: Iterable[str]) -> str:
    """The question: a line labelled as one, else the last sentence that ends with a question mark."""
    texts = list(texts)
    for text in reversed(texts):
        for line in text.splitlines():
            match = _QUESTION_LABEL.match(line)
            if match and len(match.group(1)) > 3:
                return match.group(1).strip()
    for text in reversed(texts):
        asked: list[str] = re.findall(r"[^?.!\n]*\?", text)
        if asked:
            return asked[-1].strip()
    return ""


def find_choices(text: str, question: str = "") -> list[str]:
    """Answer options written in the text.

    In order of preference: a block of labelled lines (``A. x``) under a heading that names options;
    any other such block whose items are not all times or ranges (a list of places, not answers),
    unless a heading that names options lists none under it (then a numbered list is something else);
    an inline ``Options: x, y`` list; options lettered ``(a) x (b) y`` or listed ``x, y or z`` in the
    question itself.
    """
    blocks: list[tuple[bool, list[str]]] = []
    current: list[str] = []
    headed = False
    previous = ""
    for line in text.splitlines():
        match = LABELLED_CHOICE.match(line)
        if match:
            if not current:
                headed = bool(re.search(r"\b(?:choices|options|answers|candidates)\b", previous, re.IGNORECASE))
            current.append(match.group(2).strip().strip('"'))
        else:
            if current:
                blocks.append((headed, current))
                current = []
            previous = line
    if current:
        blocks.append((headed, current))
    good = [(h, b) for h, b in blocks if len(b) >= 2 and not all(_POINT.fullmatch(i) or _RANGE.fullmatch(i) for i in b)]
    headed_block = next((b for h, b in good if h), None)
    if headed_block is not None:
        return headed_block
    if good and not _heading_without_list(text):
        return good[0][1]  # a heading naming options over no list says there are none: a numbered list is not them
    for line in text.splitlines():
        lettered = [m.group(2).strip(" ,;?") for m in _INLINE_LETTERED.finditer(line)]
        if len(lettered) >= 2:
            return lettered
        inline = _INLINE_CHOICES.search(line)
        if inline:
            parts = _listed(inline.group(1))
            if len(parts) >= 2:
                return parts
    listed = re.search(r"[:,]\s*([^:,?]+(?:,\s*[^:,?]+)*,?\s+or\s+[^,?]+)\?\s*$", question)
    return _listed(listed.group(1)) if listed else []


_OPTIONS_HEADING = re.compile(r"^\s*(?:the\s+)?(?:choices|options|answers|candidates)\s*:\s*$", re.IGNORECASE)


def _heading_without_list(text: str) -> bool:
    """Whether a line heads the options (``Choices:``) and the next line with text lists none."""
    lines = [line for line in text.splitlines() if line.strip()]
    return any(
        _OPTIONS_HEADING.match(line) and (i + 1 == len(lines) or not LABELLED_CHOICE.match(lines[i + 1]))
        for i, line in enumerate(lines)
    )


def _listed(body: str) -> list[str]:
    """The items of ``x, y or z`` (commas, semicolons, bars or "or" between them)."""
    parts = [p.strip(" .\"'?") for p in re.split(r"\s*[,;|]\s*|\s+or\s+", body.strip())]
    return [p for p in parts if p]


def parse_time(text: str) -> float:
    """``"1:02:03.5"``, ``"02:03"`` or ``"12.5 s"`` in seconds."""
    text = re.sub(r"[a-zA-Z\s]+$", "", text.strip())
    value = 0.0
    for part in text.split(":"):
        value = value * 60 + float(part)
    return value


_CLOCK_ONLY = re.compile(rf"(?<![\d:.]){_CLOCK}(?![\d:])")


def clock_times(line: str) -> list[float]:
    """Moments a line writes as clock times (``01:45``, ``1:02:03.5``): how reports name when something was seen.

    Bare durations ("at least 8 s") are left out: they say how long, not when.
    """
    return [parse_time(m.group(0)) for m in _CLOCK_ONLY.finditer(line)]


def time_spans(line: str) -> list[tuple[float, float]]:
    """Every time a line mentions, as spans: ranges as written, lone times as zero-length spans."""
    spans: list[tuple[float, float]] = []
    taken: list[tuple[int, int]] = []
    for match in _RANGE.finditer(line):
        a, b = parse_time(match.group("a")), parse_time(match.group("b"))
        if b >= a:
            spans.append((a, b))
            taken.append(match.span())
    for match in _POINT.finditer(line):
        if any(s <= match.start() < e for s, e in taken):
            continue
        t = parse_time(match.group("t"))
        spans.append((t, t))
    return spans


_OFFSET = re.compile(rf"{_SECONDS}\s+(?:after|before|later|earlier|since)\b", re.IGNORECASE)


def timed_reports(line: str) -> list[tuple[str, list[tuple[float, float]]]]:
    """The separate reports a line holds, each with the times that place it.

    A line listing several reports separated by semicolons, two or more with a time of their own
    ("cell 4 (8.8-12.4 s) shows: X; cell 9 (151.1-154.6 s) shows: X"), holds one report per part,
    placed at the part's narrowest time (a part may also name the wider stretch that was looked
    at); any other line is one report, placed at all its times. A span of time counted from
    something ("2.6 s after the sign") is not a time in the video: it places no part.
    """
    parts = [(part, time_spans(_OFFSET.sub(" ", part))) for part in line.split(";") if part.strip()]
    if sum(1 for _, spans in parts if spans) < 2:
        return [(line, time_spans(line))]
    return [(part, [min(spans, key=lambda s: s[1] - s[0])] if spans else []) for part, spans in parts]


_ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]
_NAMED_POSITION = re.compile(
    rf"\b(?P<nth>{'|'.join(_ORDINALS)}|last|\d{{1,2}}(?:st|nd|rd|th))\s+"
    r"(?:image|picture|photo|frame|screenshot|screen)s?\b",
    re.IGNORECASE,
)
_NUMBERED = re.compile(r"\b(?:image|picture|photo)\s*(?:#|no\.?)?\s*(?P<n>\d{1,2})\b", re.IGNORECASE)


def image_position(question: str, images: int) -> int | None:
    """Which of ``images`` pictures the question points at by position, as an index.

    "The second image", "the last frame", "image 2"; None when it points at none (or there is only one).
    """
    if images < 2:
        return None
    named = _NAMED_POSITION.search(question)
    if named:
        nth = named.group("nth").lower()
        if nth == "last":
            return images - 1
        at = _ORDINALS.index(nth) if nth in _ORDINALS else int(re.sub(r"\D", "", nth)) - 1
        return at if 0 <= at < images else None
    numbered = _NUMBERED.search(question)
    if numbered:
        at = int(numbered.group("n")) - 1
        return at if 0 <= at < images else None
    return None


_BY_INDEX = re.compile(
    r"\b(?:(?:index|number)\s+of\s+(?:the\s+)?(?:correct\s+|right\s+|best\s+)?(?:choice|option|answer)"
    r"|(?:choice|option|answer)\s+(?:index|number)"
    r"|(?:answer|reply|respond)\s+(?:only\s+)?with\s+(?:only\s+)?(?:the|its|an?)\s+(?P<word>index|number))\b",
    re.IGNORECASE,
)
_FROM_ZERO = re.compile(r"\b(?:0-based|zero-based|(?:starting|counting|numbered)\s+(?:at|from)\s+(?:0|zero))\b", re.I)
_FROM_ONE = re.compile(r"\b(?:1-based|one-based|(?:starting|counting|numbered)\s+(?:at|from)\s+(?:1|one))\b", re.I)
_NUMBERED_CHOICE = re.compile(r"^\s*\(?(\d{1,2})[.):]\s+\S", re.MULTILINE)


def index_base(text: str) -> int | None:
    """The number a text asks the first choice to be replied with by: 0 or 1; None when it asks for no number.

    "The index of the correct option", "the option number". A base the text states wins; else the
    number the first listed choice carries; else an index counts from 0 and a number from 1, as each
    word is used.
    """
    asked = _BY_INDEX.search(text)
    if asked is None:
        return None
    if _FROM_ZERO.search(text):
        return 0
    if _FROM_ONE.search(text):
        return 1
    listed = _NUMBERED_CHOICE.search(text)
    if listed:
        return int(listed.group(1))
    said = (asked.group("word") or asked.group(0)).lower()
    return 0 if "index" in said else 1


_STEP_OF = re.compile(
    r"\b(?:step|turn|call|iteration|attempt)\s*#?\s*(\d+)\s*(?:of|/|out\s+of)\s*(\d+)\b", re.IGNORECASE
)
_LEFT = re.compile(
    r"\b(\d+)\s+(?:more\s+)?(?:steps?|turns?|calls?|iterations?|attempts?)\s+(?:left|remain(?:ing)?)\b",
    re.IGNORECASE,
)


def budget_left(text: str) -> bool:
    """Whether the text leaves room for another step: "step 3 of 10", "2 calls left"; True when it states none."""
    steps = list(_STEP_OF.finditer(text))
    if steps:
        return int(steps[-1].group(1)) < int(steps[-1].group(2))
    left = list(_LEFT.finditer(text))
    if left:
        return int(left[-1].group(1)) > 0
    return True


def steps_left(text: str) -> int | None:
    """Steps the text leaves after this one ("step 3 of 10": 7; "2 calls left": 2); None when it states none."""
    steps = list(_STEP_OF.finditer(text))
    if steps:
        return max(0, int(steps[-1].group(2)) - int(steps[-1].group(1)))
    left = list(_LEFT.finditer(text))
    return int(left[-1].group(1)) if left else None


_LIMIT = re.compile(r"\bat\s+(most|least)\s+(\d+(?:\.\d+)?)\s*(?:s|sec|secs|seconds)\b", re.IGNORECASE)


def stated_limit(text: str, kind: str) -> float | None:
    """A duration the text sets as a bound ("at most 8 s", "at least 20 seconds"); ``kind`` is most or least."""
    for match in _LIMIT.finditer(text):
        if match.group(1).lower() == kind:
            return float(match.group(2))
    return None


def searched_share(text: str) -> float | None:
    """The largest share (0-100) of the video the text says was searched, if it says so."""
    shares = [float(m.group(1)) for m in _PERCENT_SEARCHED.finditer(text)]
    return max(shares) if shares else None
