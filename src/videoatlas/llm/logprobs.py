"""The model's own probabilities for an answer, read from the token log-probabilities a server returns.

A chat completion asked with ``logprobs`` and ``top_logprobs`` (vLLM: at most 20) carries, for every
generated token, its log-probability and the most likely alternatives at that position
(``choices[0].logprobs.content``). The final decision's reply is JSON whose top-level ``answer`` is the
index of a choice (0 for A) or, for an open question, a string. So:

* **multiple choice**: the distribution over choices is read at the token where the answer's value
  starts: each alternative there that spells a choice's index counts for that choice (a choice spelled by
  several alternatives adds them up), and the result is normalised over the choices. A choice missing from
  the top alternatives had less than the least likely one listed; it counts as 0 before normalising. The
  probability is conditioned on everything the reply wrote before the answer (with the decision schema,
  the judgements of each choice): it says how sure the model was of its answer after its judgements, not
  before. Indices of more than one digit (eleven or more choices) are not read: no probabilities then.
* **open question**: the answer's sequence probability, the product over the tokens of the string value
  of their probabilities.
* **a stop** (the agents' ``--confidence``, :func:`settled`): a boolean field's P(true)
  (:func:`flag_probability`: Video-RLM's ``sufficient``), or the probability that a string field at a path
  names one option (:func:`option_probability`: a tool loop's ``call.tool`` is ``answer``, EEA's
  ``step.action``), read at the string's first characters, where the options first differ.

The tokens of a reasoning model's thinking may come first (a ``<think>`` block in the content, or the
reasoning a server's parser took out of it): the reply is found at the end of the tokens' text, after
them, so the answer is read where the reply gives it. When the tokens' text does not end with the reply,
nothing is read (None), never guessed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from videoatlas.llm.repair import json_events

TOP_LOGPROBS = 20
"""Alternatives asked for at each position: vLLM's most (its ``--max-logprobs`` default)."""


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    """One generated token, its log-probability, and the most likely tokens at its position."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def read_tokens(raw: Any) -> tuple[TokenLogprob, ...]:
    """The tokens of a chat completion choice's ``logprobs`` (the openai object or its JSON); () when none."""
    content = _field(raw, "content") if raw is not None else None
    out = []
    for item in content or []:
        top = tuple((str(_field(t, "token")), float(_field(t, "logprob"))) for t in _field(item, "top_logprobs") or [])
        out.append(TokenLogprob(str(_field(item, "token")), float(_field(item, "logprob")), top))
    return tuple(out)


def value_start(text: str, path: Sequence[str]) -> int | None:
    """Where the value of the key ``path`` (outermost key first) begins in the JSON object ``text``; None: not there.

    ``("call", "tool")`` is the ``tool`` of the top-level ``call`` object; a key quoted inside a string value,
    or one at another depth, is not it. The first such key counts.
    """
    keys: dict[int, str] = {}
    for kind, at, end, depth in json_events(text):
        if kind != "string":
            continue
        rest = text[end + 1 :].lstrip()
        if not rest.startswith(":"):
            continue  # a string value, not a key
        keys = {d: k for d, k in keys.items() if d < depth} | {depth: text[at + 1 : end]}
        if depth == len(path) and all(keys.get(d + 1) == key for d, key in enumerate(path)):
            return len(text) - len(rest[1:].lstrip())
    return None


def answer_start(text: str, key: str = "answer") -> int | None:
    """Where the value of the top-level ``key`` begins in the JSON object ``text``; None when it has none."""
    return value_start(text, (key,))


def _offsets(tokens: Sequence[TokenLogprob], reply: str) -> tuple[list[int], int] | None:
    """Each token's start in the tokens' text, and where ``reply`` starts in it (None: it does not end with it)."""
    starts, at = [], 0
    for t in tokens:
        starts.append(at)
        at += len(t.token)
    text = "".join(t.token for t in tokens)
    if not reply or not text.endswith(reply):
        return None
    return starts, len(text) - len(reply)


def _alternatives(
    tokens: Sequence[TokenLogprob], reply: str, path: Sequence[str], inside: bool = False
) -> list[tuple[str, float]] | None:
    """What each alternative at the start of the reply's value at ``path`` spells there, with its probability.

    ``inside``: the value is a string, read from its first character (past the quote, where the strings it
    could be first differ). None when the tokens do not end with the reply or it has no such key.
    """
    placed = _offsets(tokens, reply)
    start = value_start(reply, path)
    if placed is None or start is None or (inside and not reply[start:].startswith('"')):
        return None
    starts, base = placed
    at = base + start + (1 if inside else 0)
    index = max(i for i, s in enumerate(starts) if s <= at)
    token = tokens[index]
    before = token.token[: at - starts[index]]  # what the token spells ahead of the value (e.g. ": ")
    return [
        (alternative[len(before) :], math.exp(logprob))
        for alternative, logprob in dict([(token.token, token.logprob), *token.top]).items()
        if alternative.startswith(before)
    ]


def choice_probabilities(tokens: Sequence[TokenLogprob], reply: str, choices: int) -> list[float] | None:
    """P(choice i) for i < ``choices``, summing to 1, read where the reply's ``answer`` index starts (module doc)."""
    spelled = _alternatives(tokens, reply, ("answer",))
    if spelled is None or not 1 < choices <= 10:
        return None
    mass = [0.0] * choices
    for text, p in spelled:
        digits = text[: len(text) - len(text.lstrip("0123456789"))]
        if len(digits) == 1 and int(digits) < choices:
            mass[int(digits)] += p
    total = sum(mass)
    return [m / total for m in mass] if total > 0 else None


def flag_probability(tokens: Sequence[TokenLogprob], reply: str, key: str) -> float | None:
    """P(true) of the reply's top-level boolean ``key``, normalised over ``true`` and ``false`` where it starts."""
    spelled = _alternatives(tokens, reply, (key,))
    if spelled is None:
        return None
    yes = sum(p for text, p in spelled if text and "true".startswith(text[:4]))
    no = sum(p for text, p in spelled if text and "false".startswith(text[:5]))
    return yes / (yes + no) if yes + no > 0 else None


def option_probability(
    tokens: Sequence[TokenLogprob], reply: str, path: Sequence[str], option: str, options: Sequence[str]
) -> float | None:
    """P(the string at ``path`` is ``option``), normalised over ``options``, where the string's first character is.

    An alternative counts for the one option it starts spelling (``"ans`` for ``answer``); one that could
    begin several options, or none, counts for none. None: nothing read there, or the reply's own token
    there could begin several options (the options part later than one token: not read, never guessed).
    """
    spelled = _alternatives(tokens, reply, path, inside=True)
    if spelled is None:
        return None

    def spells(text: str) -> list[str]:
        head = text.split('"', 1)[0]
        return [o for o in options if head and o.startswith(head)]

    if len(spells(spelled[0][0])) != 1:  # the reply's own token first (the dict keeps it first)
        return None
    mass = {o: 0.0 for o in options}
    for text, p in spelled:
        named = spells(text)
        if len(named) == 1:
            mass[named[0]] += p
    total = sum(mass.values())
    return mass[option] / total if total > 0 and option in mass else None


def settled(chose: bool, probability: float | None, threshold: float) -> bool:
    """Whether a stop stands: the server's ``probability`` of it against ``threshold``; without one, the model's choice.

    The rule every agent's stopping follows (``--confidence``): at 0.5 it is the model's own choice where
    the choice is between two; above, a stop the model is less sure of searches on; below, a stop the model
    leaned towards without taking is taken.
    """
    return chose if probability is None else probability >= threshold


def sequence_probability(tokens: Sequence[TokenLogprob], reply: str) -> float | None:
    """The probability of the reply's string ``answer`` (the product over its tokens; module doc)."""
    placed = _offsets(tokens, reply)
    start = answer_start(reply)
    if placed is None or start is None or not reply[start:].startswith('"'):
        return None
    starts, base = placed
    end = start + 1
    while end < len(reply) and reply[end] != '"':
        end += 2 if reply[end] == "\\" else 1
    first, last = base + start + 1, base + end  # the string's characters, quotes excluded
    inside = [t for t, s in zip(tokens, starts, strict=True) if s < last and s + len(t.token) > first]
    return math.exp(math.fsum(t.logprob for t in inside)) if inside else None
