"""The probability of each option of a choice from vLLM's ``POST /v1/decisions``, where the endpoint serves it.

vLLM 0.33 answers a decision over text with a probability per option, read from one forward pass: each
question is one prompt (the text, the question and its options labelled A, B, ...), and the probabilities are
those of the option labels as the reply's first token, with thinking off. It serves the route for a few models
only (Qwen3 and Qwen3.5 started with ``--logprobs-mode raw_logprobs`` or ``processed_logprobs``) and for text
only; for any other model it validates the request, then answers HTTP 501 ("The model does not support the
Decisions API"); a vLLM before 0.33 (or another server) has no such route: 404 or 405.

* **The request** (:func:`choice_body`): ``model``, the text as ``input`` (one string), and one ``choice``
  question (its ``instructions``, its ``name``, each option's text as its ``value``). The answer's
  probabilities are read by value, in the order of the options, and normalised over them (a model's labels
  may leave a little mass to other tokens) (:func:`read_choice_answer`); its usage gives the tokens read
  (``input_tokens``, ``input_tokens_details.cached_tokens``) and written (``output_tokens``).
* **Detection, once per endpoint per process**: the first decision on an endpoint (its base URL and model)
  tries the route. A 501, 404 or 405 (:func:`not_served`) marks the endpoint as one without decisions, and
  every later decision in the process goes straight to the other path (the chat reply's token
  log-probabilities, :mod:`videoatlas.llm.logprobs`); an answer marks it as one with them. The result is
  logged once (``decisions_route``). A 404 that names the model is no missing route: it is an error.
  Decisions started at once wait for the first one's verdict (:func:`detection`), so only one request
  detects. Any other failure detects nothing and is not hidden: the transport policy retries what it retries
  for chat (no answer, 408, 409, 429, any other 5xx; an outage is waited out), and a refusal (a 400: a bug
  of ours) is the caller's :class:`~videoatlas.errors.EndpointError`.

The request itself is sent by :meth:`videoatlas.llm.client.VLMClient.read_choice`, through the client's
transport, and recorded as its chat calls are.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import weakref
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import openai
import structlog

from videoatlas.llm.server_errors import describe, error_fields, server_message
from videoatlas.llm.settings import EndpointSettings

log = structlog.get_logger(__name__)

ROUTE = "/decisions"
"""The route, under the endpoint's base URL (``.../v1``)."""
SCHEMA = "Decisions"
"""What a decisions call's record names as its schema (in the trace, beside the chat calls' reply schemas)."""
NOT_SERVED_STATUSES = frozenset({404, 405, 501})
"""A model without the Decisions API (501), a server without the route (404, 405)."""


@dataclass(frozen=True, slots=True)
class ChoiceAnswer:
    """What a decisions answer says of one choice question: each option's probability, and the tokens it took."""

    probabilities: tuple[float, ...]
    """P(option i), in the order the options were asked, summing to 1."""
    input_tokens: int
    cached_tokens: int
    """Of the input tokens, those the server's prefix cache served."""
    output_tokens: int


Key = tuple[str, str]
_served: dict[Key, bool] = {}
"""Whether each endpoint (base URL, model) serves decisions, as detected in this process."""
_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Key, asyncio.Lock]] = weakref.WeakKeyDictionary()


def _key(settings: EndpointSettings) -> Key:
    return settings.base_url, settings.model


def served(settings: EndpointSettings) -> bool | None:
    """Whether the endpoint serves decisions, as detected in this process (None: not tried yet)."""
    return _served.get(_key(settings))


def remember(settings: EndpointSettings, serves: bool, why: str) -> None:
    """What a decisions request told of the endpoint (``why``: in a few words); logged when it is news."""
    key = _key(settings)
    if _served.get(key) == serves:
        return
    _served[key] = serves
    log.info("decisions_route", base_url=settings.base_url, model=settings.model, served=serves, why=why)


def forget() -> None:
    """Forget every endpoint's verdict, as a new process starts (tests)."""
    _served.clear()


@contextlib.asynccontextmanager
async def detection(settings: EndpointSettings) -> AsyncIterator[bool | None]:
    """The endpoint's verdict (None: unknown, the caller's request detects it).

    While it is unknown, the block runs alone among the decisions to that endpoint in this event loop: those
    started meanwhile wait and get the verdict it left (or detect in turn, when it left none: a failure).
    """
    key = _key(settings)
    if key in _served:
        yield _served[key]
        return
    locks = _locks.setdefault(asyncio.get_running_loop(), {})
    async with locks.setdefault(key, asyncio.Lock()):
        yield _served.get(key)


def not_served(exc: openai.APIStatusError) -> bool:
    """Whether a refusal says the endpoint has no decisions (501, 404, 405), not that the request was wrong.

    A 404 that names the model (vLLM's ``The model `X` does not exist``) is about the request: not this.
    """
    if exc.status_code not in NOT_SERVED_STATUSES:
        return False
    names_model = error_fields(exc).get("param") == "model" or "does not exist" in server_message(exc)
    return not (exc.status_code == 404 and names_model)


def not_served_reason(exc: openai.APIStatusError) -> str:
    """Why the endpoint counts as one without decisions, for the log."""
    return describe(exc)[:200]


def choice_body(model: str, text: str, instructions: str, options: Sequence[str], name: str) -> dict[str, Any]:
    """A decisions request of one ``choice`` question over ``text``: each option's text is its value."""
    question = {
        "type": "choice",
        "name": name,
        "instructions": instructions,
        "choices": [{"value": option} for option in options],
    }
    return {"model": model, "input": text, "questions": [question]}


def read_choice_answer(payload: Any, options: Sequence[str]) -> ChoiceAnswer:
    """The answer of :func:`choice_body`'s question: each option's probability, normalised; and the usage.

    Raises ValueError for a reply that is not such an answer (another shape, an option missing, no mass).
    """
    try:
        answer = payload["answers"][0]
        if answer.get("type") != "choice":
            raise ValueError(f"the answer is of type {answer.get('type')!r}, not a choice")
        given = {str(p["value"]): float(p["probability"]) for p in answer["probabilities"]}
        usage = payload.get("usage") or {}
        details = usage.get("input_tokens_details") or {}
        counted = (int(usage.get("input_tokens") or 0), int(details.get("cached_tokens") or 0))
        output = int(usage.get("output_tokens") or 0)
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a decisions answer ({type(exc).__name__}: {exc})") from None
    missing = [option for option in options if option not in given]
    if missing:
        raise ValueError(f"no probability for option(s) {', '.join(map(repr, missing))}")
    mass = [given[option] for option in options]
    total = math.fsum(mass)
    if not all(math.isfinite(p) and p >= 0 for p in mass) or total <= 0:
        raise ValueError(f"the probabilities {mass} are no distribution")
    return ChoiceAnswer(tuple(p / total for p in mass), counted[0], counted[1], output)
