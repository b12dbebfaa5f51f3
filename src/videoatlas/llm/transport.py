"""One transport policy for every request to an endpoint: chat, model listing, embeddings, transcription.

A request that gets no usable answer is a :class:`Failure`: no answer at all (connection refused
or reset, a timeout) or an HTTP error status. What is done about it is the same for every route:

* **Retry**: no answer, HTTP 408, 409, 429 and every 5xx are retried, at most ``max_retries``
  times after the first attempt; any other status is the request's own (a refusal) and goes back
  to the caller at once, which puts it in its own words (:data:`RETRYABLE_STATUSES`).
* **Backoff**: before retry ``n`` the request sleeps a time drawn uniformly from
  ``[0, min(backoff_cap_s, backoff_s * 2 ** (n - 1))]``: exponential, capped by the endpoint's
  settings, with full jitter so that the calls that failed together do not come back together.
* **Outage**: no answer or a 5xx from an endpoint that answered before in this process may mean
  the endpoint is away (restarted, preempted). The endpoint's shared watch
  (:mod:`videoatlas.llm.outage`) probes it; while it is down the request waits, spending no retry,
  and goes again once it answers; past the patience (``--endpoint-patience``,
  :attr:`EndpointSettings.patience_s`) it raises :class:`~videoatlas.errors.EndpointDownError`
  (exit 75: the run is interrupted, resumable, never scored).

The caller gives the request as a function that either returns the answer or raises; a failure
still retryable after the last retry becomes the caller's own error (``exhausted``).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx
import openai
import structlog

from videoatlas.llm.outage import EndpointWatch, watch_for
from videoatlas.llm.server_errors import describe
from videoatlas.llm.settings import EndpointSettings

log = structlog.get_logger(__name__)
R = TypeVar("R")

RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""Retried besides every 5xx: a request timeout, a conflict, too many requests."""


@dataclass(frozen=True, slots=True)
class Failure:
    """A request that got no usable answer."""

    status: int | None
    """The HTTP status (None: no answer at all, a connection error or a timeout)."""
    detail: str
    """In a few words, for the log."""

    @property
    def retryable(self) -> bool:
        """Whether sending the request again may get an answer."""
        return self.status is None or self.status >= 500 or self.status in RETRYABLE_STATUSES

    @property
    def outage(self) -> bool:
        """Whether the failure may mean the endpoint is away (no answer, or a 5xx); a 4xx never does."""
        return self.status is None or self.status >= 500


def failure_of(exc: BaseException) -> Failure | None:
    """The transport failure ``exc`` is (openai's or httpx's), or None when it is none (a bug, an unreadable reply)."""
    if isinstance(exc, openai.APIStatusError):
        return Failure(exc.status_code, describe(exc))
    if isinstance(exc, openai.APIConnectionError):  # a timeout is a connection error
        return Failure(None, describe(exc))
    if isinstance(exc, httpx.HTTPStatusError):
        return Failure(exc.response.status_code, f"HTTP {exc.response.status_code}")
    if isinstance(exc, httpx.TimeoutException):
        return Failure(None, "request timed out")
    if isinstance(exc, httpx.TransportError):
        return Failure(None, f"connection error ({type(exc).__name__})")
    return None


def retryable(exc: BaseException) -> bool:
    """Whether ``exc`` is a failure the policy retries."""
    failure = failure_of(exc)
    return failure is not None and failure.retryable


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the endpoint may be away: no connection, no answer in time, or an HTTP 5xx."""
    failure = failure_of(exc)
    return failure is not None and failure.outage


def backoff_delay(attempt: int, settings: EndpointSettings, rng: random.Random) -> float:
    """Seconds to sleep before retry ``attempt`` (1, 2, ...): exponential, capped, with full jitter."""
    ceiling = min(settings.backoff_cap_s, settings.backoff_s * 2 ** (attempt - 1))
    return rng.uniform(0.0, ceiling)


class Transport:
    """Sends one endpoint's requests under the policy, whatever the route.

    ``watch`` waits out the endpoint's outages; by default (``patient``) the endpoint's shared watch,
    made on the first request (in the caller's event loop); with ``patient=False`` and no watch, none
    (a model that is no HTTP endpoint, such as a fake in tests). ``event`` names the log lines
    (``{event}_retry``, ``{event}_resumed``).
    """

    def __init__(
        self,
        settings: EndpointSettings,
        event: str,
        *,
        watch: EndpointWatch | None = None,
        patient: bool = True,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        seed: int | None = None,
    ) -> None:
        self.settings = settings
        self.event = event
        self._watch = watch
        self._patient = patient
        self._sleep = sleep
        self._rng = random.Random(seed)

    @property
    def watch(self) -> EndpointWatch | None:
        """The endpoint's outage watch (None when this transport waits out no outage)."""
        if self._watch is None and self._patient:
            self._watch = watch_for(self.settings)
        return self._watch

    async def send(
        self,
        request: Callable[[], Awaitable[R]],
        exhausted: Callable[[Exception, int], Exception],
        on_retry: Callable[[], None] | None = None,
    ) -> R:
        """``request()``'s answer, sent again as the policy says.

        A failure that is not retried (a refusal, or no transport failure at all) is raised as it came;
        one still failing after the last retry is raised as ``exhausted(exc, attempts)``; an endpoint
        down past the patience raises :class:`~videoatlas.errors.EndpointDownError`. ``on_retry`` hears
        each time the request is sent again (after a backoff, or once the endpoint is back).
        """
        attempt = 0
        watch = self.watch
        while True:
            attempt += 1
            if watch is not None:
                await watch.wait_until_up()  # nothing is sent to an endpoint that is down
            try:
                answer = await request()
            except Exception as exc:
                failure = failure_of(exc)
                if failure is None or not failure.retryable:
                    raise
                if watch is not None and failure.outage and await watch.outage(failure.detail):
                    # The endpoint was down and answers again: the failure was not this request's.
                    attempt -= 1
                    if on_retry is not None:
                        on_retry()
                    log.info(f"{self.event}_resumed", error=failure.detail)
                    continue
                if attempt > self.settings.max_retries:
                    raise exhausted(exc, attempt) from None
                if on_retry is not None:
                    on_retry()
                log.info(f"{self.event}_retry", attempt=attempt, error=failure.detail[:200])
                await self._sleep(backoff_delay(attempt, self.settings, self._rng))
                continue
            if watch is not None:
                watch.saw_answer()
            return answer
