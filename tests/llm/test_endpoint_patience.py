"""Endpoint patience with a scripted model and a fake clock: an outage is waited out, a refusal is not."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel, Field

from videoatlas.errors import BadInputError, EndpointDownError, EndpointError
from videoatlas.llm.client import VLMClient
from videoatlas.llm.outage import EndpointWatch
from videoatlas.llm.settings import EndpointSettings, parse_patience
from videoatlas.llm.transport import is_outage

pytestmark = pytest.mark.unit

URL = "http://10.0.0.9:8000/v1"


class Pick(BaseModel):
    cell: int


def _request() -> httpx2.Request:
    return httpx2.Request("POST", URL + "/chat/completions")


def refused() -> openai.APIConnectionError:
    return openai.APIConnectionError(request=_request())


def http(status: int) -> openai.APIStatusError:
    response = httpx2.Response(status, request=_request(), json={"error": {"message": "nope"}})
    kind = openai.InternalServerError if status >= 500 else openai.BadRequestError
    return kind("nope", response=response, body={"error": {"message": "nope"}})


class Clock:
    """Time that passes only when someone sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


class Scripted(GenericFakeChatModel):
    """Raises the scripted errors first (one per request), then answers."""

    failures: list[Any] = Field(default_factory=list)
    sent: int = 0

    async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.sent += 1
        if self.failures:
            raise self.failures.pop(0)
        return await super()._agenerate(messages, *args, **kwargs)


class Endpoint:
    """A probe whose answer the test sets: down until ``back_at`` on the clock."""

    def __init__(self, clock: Clock, back_at: float | None) -> None:
        self.clock = clock
        self.back_at = back_at
        self.probes = 0

    async def __call__(self) -> bool:
        self.probes += 1
        return self.back_at is not None and self.clock() >= self.back_at


def _client(failures: list[Any], probe: Endpoint, clock: Clock, patience: float = 300.0) -> tuple[VLMClient, Scripted]:
    model = Scripted(messages=iter([AIMessage(content='{"cell": 3}')]), failures=failures)
    settings = EndpointSettings(base_url=URL, max_retries=2, backoff_s=0.01, patience_s=patience)
    watch = EndpointWatch(URL, patience, probe, clock=clock, sleep=clock.sleep, seed=0)
    watch.saw_answer()  # it answered before in this process: an outage is waited out
    return VLMClient(model, settings, sleep=clock.sleep, watch=watch), model


@pytest.fixture
def clock() -> Iterator[Clock]:
    yield Clock()


async def test_a_restart_longer_than_the_retry_budget_is_waited_out(clock: Clock) -> None:
    endpoint = Endpoint(clock, back_at=clock.now + 60)  # a minute away: far past 2 retries
    client, model = _client([refused()], endpoint, clock)
    reply = await client.ask(Pick, system="s", text="t")
    assert reply.value.cell == 3 and reply.record.outcome == "ok"
    watch = client.watch
    assert watch is not None and watch.outages == 1 and watch.down_for() is None
    assert endpoint.back_at is not None and clock.now >= endpoint.back_at  # it waited for the endpoint
    # While down the call sent nothing (it probed, with backoff: a handful of probes for a minute);
    # once the endpoint was back, it sent once more and got its answer.
    assert model.sent == 2 and 3 <= endpoint.probes <= 20


async def test_past_the_patience_the_call_raises_an_outage_and_later_calls_fail_fast(clock: Clock) -> None:
    endpoint = Endpoint(clock, back_at=None)
    client, model = _client([refused()] * 50, endpoint, clock, patience=30.0)
    with pytest.raises(EndpointDownError, match=r"did not come back within 30 s"):
        await client.ask(Pick, system="s", text="t")
    assert 30.0 <= clock.now - 1000.0 < 31.0
    sent = model.sent
    began = clock.now
    with pytest.raises(EndpointDownError):
        await client.ask(Pick, system="s", text="t")
    assert model.sent == sent and clock.now == began  # nothing sent, no second wait: one probe said still down


async def test_the_endpoint_back_after_the_patience_ends_the_outage(clock: Clock) -> None:
    endpoint = Endpoint(clock, back_at=None)
    client, _ = _client([refused()], endpoint, clock, patience=5.0)
    with pytest.raises(EndpointDownError):
        await client.ask(Pick, system="s", text="t")
    endpoint.back_at = clock.now
    reply = await client.ask(Pick, system="s", text="t")
    assert reply.value.cell == 3 and client.watch is not None and client.watch.down_for() is None


async def test_a_server_error_while_the_endpoint_answers_spends_retries(clock: Clock) -> None:
    endpoint = Endpoint(clock, back_at=clock.now)  # up all along: the 500s are the request's
    client, model = _client([http(500)] * 5, endpoint, clock)
    with pytest.raises(EndpointError, match="failed after 3 attempts"):
        await client.ask(Pick, system="s", text="t")
    assert model.sent == 3 and client.watch is not None and client.watch.outages == 0


async def test_a_refusal_is_never_an_outage(clock: Clock) -> None:
    endpoint = Endpoint(clock, back_at=None)
    client, model = _client([http(400)], endpoint, clock)
    with pytest.raises(EndpointError, match="HTTP 400"):
        await client.ask(Pick, system="s", text="t")
    assert model.sent == 1 and endpoint.probes == 0
    assert not is_outage(http(400)) and not is_outage(http(429)) and is_outage(http(503)) and is_outage(refused())


async def test_an_endpoint_that_never_answered_fails_fast(clock: Clock) -> None:
    endpoint = Endpoint(clock, back_at=None)
    model = Scripted(messages=iter([]), failures=[refused()] * 10)
    settings = EndpointSettings(base_url=URL, max_retries=2, backoff_s=0.01)
    watch = EndpointWatch(URL, 300.0, endpoint, clock=clock, sleep=clock.sleep)
    client = VLMClient(model, settings, sleep=clock.sleep, watch=watch)
    with pytest.raises(EndpointError, match="failed after 3 attempts"):
        await client.ask(Pick, system="s", text="t")
    assert endpoint.probes == 0 and clock.now - 1000.0 < 1.0  # a wrong URL is not waited for


def test_patience_settings() -> None:
    assert EndpointSettings().patience_s == 300.0
    assert EndpointSettings.from_env({"VIDEOATLAS_ENDPOINT_PATIENCE": "45"}).patience_s == 45.0
    assert EndpointSettings.from_env({"VIDEOATLAS_ENDPOINT_PATIENCE": "45"}, patience_s=0.0).patience_s == 0.0
    for bad in ("-1", "soon", "inf", "nan"):
        with pytest.raises(BadInputError, match=r"0 or more seconds|number of seconds"):
            parse_patience(bad)
