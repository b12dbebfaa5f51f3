"""The one transport policy, without a network: which failures are retried, the backoff's bounds, the patience."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import httpx2
import openai
import pytest

from videoatlas.errors import EndpointDownError, EndpointError
from videoatlas.llm.outage import EndpointWatch
from videoatlas.llm.settings import EndpointSettings
from videoatlas.llm.transport import Transport, backoff_delay, failure_of, is_outage, retryable

pytestmark = pytest.mark.unit

URL = "http://10.0.0.9:8000/v1"


def openai_status(status: int) -> openai.APIStatusError:
    request = httpx2.Request("POST", URL + "/chat/completions")
    response = httpx2.Response(status, request=request, json={"error": {"message": "nope"}})
    return openai.APIStatusError("nope", response=response, body={"error": {"message": "nope"}})


def httpx_status(status: int) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", URL + "/embeddings")
    return httpx.HTTPStatusError("nope", request=request, response=httpx.Response(status, request=request))


def no_answer() -> list[BaseException]:
    """Every way a request gets no answer, from the openai client (chat, transcription) and httpx (embeddings)."""
    chat = httpx2.Request("POST", URL + "/chat/completions")
    embed = httpx.Request("POST", URL + "/embeddings")
    return [
        openai.APIConnectionError(request=chat),
        openai.APITimeoutError(request=chat),
        httpx.ConnectError("refused", request=embed),
        httpx.ReadTimeout("slow", request=embed),
        httpx.RemoteProtocolError("Server disconnected without sending a response.", request=embed),
    ]


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504])
def test_these_statuses_are_retried_from_every_client(status: int) -> None:
    assert retryable(openai_status(status)) and retryable(httpx_status(status))
    assert is_outage(openai_status(status)) == (status >= 500) == is_outage(httpx_status(status))


@pytest.mark.parametrize("status", [400, 401, 403, 404, 405, 413, 422])
def test_a_refusal_is_neither_retried_nor_an_outage(status: int) -> None:
    for exc in (openai_status(status), httpx_status(status)):
        assert not retryable(exc) and not is_outage(exc)


def test_no_answer_at_all_is_retried_and_may_be_an_outage() -> None:
    for exc in no_answer():
        failure = failure_of(exc)
        assert failure is not None and failure.status is None and retryable(exc) and is_outage(exc), exc
    assert failure_of(ValueError("a bug")) is None and not retryable(KeyError("data"))


def test_the_backoff_doubles_to_the_settings_cap_with_full_jitter() -> None:
    settings = EndpointSettings(backoff_s=0.5, backoff_cap_s=3.0)
    rng = random.Random(7)
    for attempt, ceiling in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (5, 3.0), (9, 3.0)]:
        delays = [backoff_delay(attempt, settings, rng) for _ in range(400)]
        assert all(0.0 <= d <= ceiling for d in delays), attempt
        # Full jitter: the draws cover the whole range, from near nothing to near the ceiling.
        assert min(delays) < 0.1 * ceiling and max(delays) > 0.9 * ceiling, attempt
    assert backoff_delay(3, EndpointSettings(backoff_s=0.0), rng) == 0.0


class Clock:
    """Time that passes only when someone sleeps; the sleeps are kept."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class Server:
    """Answers requests with the scripted failures first; its probe answers from ``back_at`` on the clock."""

    def __init__(self, clock: Clock, failures: list[BaseException], back_at: float | None = 0.0) -> None:
        self.clock, self.failures, self.back_at = clock, failures, back_at
        self.sent = 0
        self.probes = 0

    async def request(self) -> str:
        self.sent += 1
        if self.failures:
            raise self.failures.pop(0)
        return "answer"

    async def probe(self) -> bool:
        self.probes += 1
        return self.back_at is not None and self.clock() >= self.back_at


def transport(server: Server, clock: Clock, max_retries: int = 2, patience: float = 300.0) -> Transport:
    settings = EndpointSettings(base_url=URL, max_retries=max_retries, backoff_s=1.0, backoff_cap_s=3.0)
    watch = EndpointWatch(URL, patience, server.probe, clock=clock, sleep=clock.sleep, seed=0)
    watch.saw_answer()  # it answered before in this process: an outage is waited out
    return Transport(settings, "test_call", watch=watch, sleep=clock.sleep, seed=0)


def exhausted(exc: Exception, attempts: int) -> Exception:
    return EndpointError(f"gave up after {attempts} attempts: {type(exc).__name__}")


async def send(t: Transport, server: Server) -> tuple[Any, int]:
    retries = 0

    def retried() -> None:
        nonlocal retries
        retries += 1

    request: Callable[[], Awaitable[str]] = server.request
    return await t.send(request, exhausted, retried), retries


async def test_failures_of_the_request_spend_its_retries_then_are_the_callers_error() -> None:
    clock = Clock()
    server = Server(clock, [openai_status(503)] * 5)  # the probe answers: the 503s are the request's own
    with pytest.raises(EndpointError, match="gave up after 3 attempts: APIStatusError"):
        await send(transport(server, clock), server)
    assert server.sent == 3 and len(clock.slept) == 2 and 0 <= clock.slept[0] <= 1.0 and 0 <= clock.slept[1] <= 2.0


async def test_a_request_that_recovers_within_its_retries_answers() -> None:
    clock = Clock()
    server = Server(clock, [httpx_status(429), httpx.ReadTimeout("slow")])
    assert await send(transport(server, clock), server) == ("answer", 2)
    assert server.sent == 3


@pytest.mark.parametrize("error", [openai_status(400), httpx_status(404), ValueError("unreadable reply")])
async def test_a_refusal_or_a_bug_is_raised_as_it_came_at_once(error: Exception) -> None:
    clock = Clock()
    server = Server(clock, [error])
    with pytest.raises(type(error)):
        await send(transport(server, clock), server)
    assert server.sent == 1 and server.probes == 0 and clock.slept == []


async def test_an_outage_is_waited_out_without_spending_a_retry() -> None:
    clock = Clock()
    server = Server(clock, [httpx.ConnectError("refused")], back_at=clock.now + 60)
    answer, retries = await send(transport(server, clock, max_retries=0), server)  # no retry to spend
    assert answer == "answer" and retries == 1 and server.sent == 2
    assert clock.now >= 1060.0 and 3 <= server.probes <= 20


async def test_past_the_patience_the_request_is_an_outage_that_exits_75() -> None:
    clock = Clock()
    server = Server(clock, [openai_status(503)] * 3, back_at=None)
    with pytest.raises(EndpointDownError, match=r"did not come back within 30 s \(--endpoint-patience\)") as caught:
        await send(transport(server, clock, patience=30.0), server)
    assert caught.value.exit_code == 75 and server.sent == 1 and 30.0 <= clock.now - 1000.0 < 31.0


async def test_an_endpoint_that_never_answered_is_not_waited_for() -> None:
    clock = Clock()
    server = Server(clock, [httpx.ConnectError("refused")] * 5, back_at=None)
    settings = EndpointSettings(base_url=URL, max_retries=1, backoff_s=0.01)
    watch = EndpointWatch(URL, 300.0, server.probe, clock=clock, sleep=clock.sleep)
    with pytest.raises(EndpointError, match="gave up after 2 attempts: ConnectError"):
        await send(Transport(settings, "test_call", watch=watch, sleep=clock.sleep), server)
    assert server.probes == 0 and clock.now - 1000.0 < 1.0  # a wrong URL fails fast
