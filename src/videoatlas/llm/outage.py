"""Endpoint patience: an endpoint that stops answering is waited for, not blamed on the question.

The outage rule of the transport policy (:mod:`videoatlas.llm.transport`), the same for chat,
model listing, embeddings and transcription. No answer (connection refused or reset, a timeout)
and an HTTP 5xx say something about the endpoint, not about the request. When a request fails
that way, the endpoint is probed (``GET {base_url}/models``, what vLLM serves only once its model
is loaded). If the probe answers, the failure was the request's own and it spends one of its
retries as before. If the probe fails too, the endpoint is marked *down* for the whole process:
every request to it waits, probing with backoff, instead of spending its retries; an eval starts
no new question; progress shows how long it has been down. When a probe answers again everything
goes on. Past the patience (:attr:`EndpointSettings.patience_s`), every waiting request raises
:class:`~videoatlas.errors.EndpointDownError`: its run stops as interrupted, resumable, never
scored as a wrong answer.

Only an endpoint that answered before in this process is waited for: one that never did (a wrong
URL, a server not started) fails fast with the usual hint. 4xx refusals are never outages.
"""

from __future__ import annotations

import asyncio
import random
import time
import weakref
from collections.abc import Awaitable, Callable

import httpx
import structlog

from videoatlas.errors import EndpointDownError
from videoatlas.llm.settings import EndpointSettings

log = structlog.get_logger(__name__)

PROBE_TIMEOUT_S = 5.0
"""A probe that gets no answer in this long counts as down (a server still loading may accept and not answer)."""
PROBE_BACKOFF_S = 0.5
PROBE_BACKOFF_CAP_S = 5.0

Probe = Callable[[], Awaitable[bool]]
"""True when the endpoint answers."""


def http_probe(settings: EndpointSettings) -> Probe:
    """A probe of the endpoint's models route: any answer below HTTP 500 means the server is up."""
    url = settings.base_url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {settings.api_key or 'EMPTY'}"}
    timeout = min(PROBE_TIMEOUT_S, settings.timeout_s)

    async def probe() -> bool:
        try:
            async with httpx.AsyncClient(timeout=timeout) as client:
                response = await client.get(url, headers=headers)
        except httpx.HTTPError:
            return False
        return response.status_code < 500

    return probe


class EndpointWatch:
    """Whether one endpoint is down, and since when; shared by every call to it in the process."""

    def __init__(
        self,
        base_url: str,
        patience_s: float,
        probe: Probe,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        seed: int | None = None,
    ) -> None:
        self.base_url = base_url
        self.patience_s = patience_s
        self.probe = probe
        self.seen_up = False
        """Whether the endpoint answered in this process (only then is an outage waited out)."""
        self.down_since: float | None = None
        self.outages = 0
        self._gave_up = False
        self._clock = clock
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._lock = asyncio.Lock()  # one prober at a time; the other waiters queue behind it

    def down_for(self) -> float | None:
        """Seconds the endpoint has been down, or None while it is up."""
        return None if self.down_since is None else self._clock() - self.down_since

    def saw_answer(self) -> None:
        """A request to the endpoint got an answer."""
        self.seen_up = True

    async def wait_until_up(self) -> None:
        """Return at once while the endpoint is up; while it is down, wait for it (or raise past the patience)."""
        if self.down_since is not None:
            await self._wait()

    async def outage(self, why: str) -> bool:
        """After a request got no answer or a 5xx (``why``, in a few words): whether the endpoint was down.

        True: the endpoint was down and answers again (the request goes on without spending a retry).
        False: the failure was the request's own (the endpoint answers, or never answered in this
        process). Raises :class:`EndpointDownError` past the patience.
        """
        if not self.seen_up:
            return False
        if self.down_since is None:
            if await self.probe():
                return False
            if self.down_since is None:  # another call may have marked it meanwhile
                self.down_since = self._clock()
                self.outages += 1
                self._gave_up = False
                log.warning("endpoint_down", base_url=self.base_url, error=why, patience_s=self.patience_s)
        await self._wait()
        return True

    async def _wait(self) -> None:
        async with self._lock:
            step = 0
            while self.down_since is not None:
                waited = self._clock() - self.down_since
                if self._gave_up or waited >= self.patience_s:
                    # Past the patience each waiter still asks once: the endpoint may just have come back.
                    if await self.probe():
                        self._back(waited)
                        return
                    self._gave_up = True
                    raise EndpointDownError(
                        f"the endpoint at {self.base_url} stopped answering and did not come back within "
                        f"{self.patience_s:g} s (--endpoint-patience)"
                    )
                step += 1
                left = self.patience_s - waited
                await self._sleep(min(left, self._rng.uniform(0.5, 1.0) * _backoff(step)))
                if await self.probe():
                    self._back(self._clock() - self.down_since)
                    return

    def _back(self, waited: float) -> None:
        log.warning("endpoint_back", base_url=self.base_url, down_s=round(waited, 1))
        self.down_since = None
        self._gave_up = False


def _backoff(step: int) -> float:
    return float(min(PROBE_BACKOFF_CAP_S, PROBE_BACKOFF_S * 2 ** (step - 1)))


_watches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, EndpointWatch]] = weakref.WeakKeyDictionary()


def watch_for(settings: EndpointSettings, probe: Probe | None = None) -> EndpointWatch:
    """The process's watch of ``settings.base_url`` (asyncio objects belong to one event loop: one per loop).

    The latest settings' patience applies to every call to the endpoint.
    """
    loop = asyncio.get_running_loop()
    watches = _watches.setdefault(loop, {})
    watch = watches.get(settings.base_url)
    if watch is None:
        watch = watches[settings.base_url] = EndpointWatch(
            settings.base_url, settings.patience_s, probe or http_probe(settings)
        )
    watch.patience_s = settings.patience_s
    return watch
