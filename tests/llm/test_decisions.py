"""The client of ``POST /v1/decisions`` over real HTTP, against a scripted server (VLMClient.read_choice).

What is checked: the request's shape, the probabilities read by value and normalised, the tokens counted and the
call recorded; the endpoint's verdict detected once per process (501, 404, 405: no route, remembered, logged
once, never recorded as a call); every other failure surfaced (a 400, a 404 naming the model) or retried as chat
is (a 503), never taken for a missing route.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import structlog
from aiohttp import web

from agent_helpers import ScriptedChat
from http_helpers import listening
from videoatlas.errors import EndpointError
from videoatlas.llm import decisions
from videoatlas.llm.chat_model import OpenAICompatibleChat
from videoatlas.llm.client import VLMClient
from videoatlas.llm.records import CallRecord
from videoatlas.llm.settings import EndpointSettings

pytestmark = pytest.mark.e2e

MODEL = "qwen3-test"
OPTIONS = ["the red car", "the blue bus", "a bicycle"]


@pytest.fixture(autouse=True)
def new_process() -> Iterator[None]:
    """Each test starts as a new process does: no endpoint's verdict known."""
    decisions.forget()
    yield
    decisions.forget()


class Server:
    """A decisions route that answers each request with the next of ``replies`` (status, JSON body)."""

    def __init__(self, *replies: tuple[int, Any]) -> None:
        self.replies = list(replies)
        self.bodies: list[dict[str, Any]] = []

    async def decide(self, request: web.Request) -> web.Response:
        self.bodies.append(await request.json())
        status, body = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return web.json_response(body, status=status)

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model"}]})


def answer(probabilities: list[float], usage: tuple[int, int, int] = (120, 32, 1)) -> dict[str, Any]:
    """vLLM 0.33's answer to one choice question over :data:`OPTIONS`."""
    listed = [{"value": v, "probability": p} for v, p in zip(OPTIONS, probabilities, strict=True)]
    top = max(range(len(probabilities)), key=probabilities.__getitem__)
    given, cached, output = usage
    return {
        "model": MODEL,
        "answers": [
            {
                "type": "choice",
                "name": "answer",
                "choice": OPTIONS[top],
                "probabilities": listed,
                "confidence": probabilities[top],
            }
        ],
        "usage": {
            "input_tokens": given,
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": given + output,
        },
    }


def not_supported() -> dict[str, Any]:
    message = "The model does not support the Decisions API"
    return {"error": {"message": message, "type": "NotImplementedError", "param": None, "code": 501}}


@pytest.fixture
async def serve() -> AsyncIterator[Any]:
    """Start a :class:`Server`; yields (server, client) makers; closes every client made."""
    made: list[OpenAICompatibleChat] = []
    stack: list[Any] = []

    async def start(server: Server) -> tuple[VLMClient, list[CallRecord]]:
        app = web.Application()
        app.router.add_post("/v1/decisions", server.decide)
        app.router.add_get("/v1/models", server.models)
        context = listening(app)
        url = await context.__aenter__()
        stack.append(context)
        return client(url)

    def client(url: str) -> tuple[VLMClient, list[CallRecord]]:
        settings = EndpointSettings(base_url=f"{url}/v1", model=MODEL, max_retries=2, backoff_s=0.01)
        chat = OpenAICompatibleChat(settings=settings)
        made.append(chat)
        records: list[CallRecord] = []
        return VLMClient(chat, settings, on_record=records.append, seed=0), records

    start.client = client  # type: ignore[attr-defined]
    yield start
    for chat in made:
        await chat.aclose()
    for context in reversed(stack):
        await context.__aexit__(None, None, None)


async def read(vlm: VLMClient) -> Any:
    return await vlm.read_choice(
        text="System.\n\nThe sign reads BLUE BUS.", instructions="Which of the choices answers the question: What?",
        options=OPTIONS, node="answer", meta={"template": "answer:abc"}, role="planner",
    )  # fmt: skip


async def test_a_served_route_gives_each_options_probability_normalised_and_the_call_is_counted(serve: Any) -> None:
    server = Server((200, answer([0.2, 0.6, 0.15])))  # 0.05 left to tokens that are no label
    vlm, records = await serve(server)
    got = await read(vlm)
    assert got is not None
    assert got.probabilities == pytest.approx((0.2 / 0.95, 0.6 / 0.95, 0.15 / 0.95))
    assert sum(got.probabilities) == pytest.approx(1.0)
    (body,) = server.bodies
    assert body == {
        "model": MODEL,
        "input": "System.\n\nThe sign reads BLUE BUS.",
        "questions": [
            {
                "type": "choice",
                "name": "answer",
                "instructions": "Which of the choices answers the question: What?",
                "choices": [{"value": option} for option in OPTIONS],
            }
        ],
    }
    (record,) = records
    assert record is got.record and record.schema == "Decisions" and record.outcome == "ok"
    assert (record.prompt_tokens, record.cached_tokens, record.completion_tokens) == (120, 32, 1)
    assert (record.node, record.role, record.attempts) == ("answer", "planner", 1)
    assert record.meta == {"template": "answer:abc"}
    assert '"the blue bus"' in record.reply_text
    assert vlm.totals.calls == 1 and vlm.totals.prompt_tokens == 120
    assert decisions.served(vlm.settings) is True
    assert await read(vlm) is not None and len(server.bodies) == 2  # served: every decision reads


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (501, not_supported()),  # vLLM 0.33 serving a model without the Decisions API
        (404, {"detail": "Not Found"}),  # a server without the route (FastAPI's words: an older vLLM)
        (405, {"detail": "Method Not Allowed"}),
    ],
)
async def test_a_server_without_decisions_is_detected_once_logged_once_and_never_counted_as_a_call(
    serve: Any, status: int, body: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    logged = structlog.testing.CapturingLogger()
    monkeypatch.setattr(decisions, "log", logged)
    server = Server((status, body))
    vlm, records = await serve(server)
    assert await read(vlm) is None
    assert await read(vlm) is None
    again, _ = serve.client(vlm.settings.base_url.removesuffix("/v1"))  # another run in the same process
    assert await read(again) is None
    assert len(server.bodies) == 1  # one request detected it; the decisions after it sent none
    assert records == [] and vlm.totals.calls == 0  # no call: nothing recorded, nothing in the cost
    (detected,) = logged.calls  # once, whatever the decisions after it
    assert (detected.method_name, detected.args) == ("info", ("decisions_route",))
    assert detected.kwargs["served"] is False and f"HTTP {status}" in detected.kwargs["why"]
    assert decisions.served(vlm.settings) is False


async def test_decisions_started_together_wait_for_the_first_ones_verdict(serve: Any) -> None:
    server = Server((501, not_supported()))
    vlm, _ = await serve(server)
    assert list(await asyncio.gather(read(vlm), read(vlm), read(vlm))) == [None, None, None]
    assert len(server.bodies) == 1


async def test_a_refusal_is_an_error_and_detects_nothing(serve: Any) -> None:
    refused = {"error": {"message": "questions: at most 64", "type": "BadRequestError", "param": None, "code": 400}}
    server = Server((400, refused), (200, answer([0.5, 0.25, 0.25])))
    vlm, records = await serve(server)
    with pytest.raises(EndpointError, match=r"node answer: HTTP 400, .* decisions request: questions: at most 64"):
        await read(vlm)
    assert len(server.bodies) == 1  # a 400 is not retried
    (failed,) = records
    assert failed.outcome == "failed" and failed.schema == "Decisions" and "HTTP 400" in (failed.error or "")
    assert decisions.served(vlm.settings) is None  # unknown: the next decision tries again
    got = await read(vlm)
    assert got is not None and got.probabilities == pytest.approx((0.5, 0.25, 0.25))


async def test_a_404_that_names_the_model_is_an_error_not_a_missing_route(serve: Any) -> None:
    message = "The model `x` does not exist."
    gone = {"error": {"message": message, "type": "NotFoundError", "param": "model", "code": 404}}
    vlm, _ = await serve(Server((404, gone)))
    with pytest.raises(EndpointError, match="does not exist"):
        await read(vlm)
    assert decisions.served(vlm.settings) is None


async def test_a_server_error_is_retried_as_a_chat_call_is(serve: Any) -> None:
    busy = {"error": {"message": "busy", "type": "ServiceUnavailableError", "param": None, "code": 503}}
    server = Server((503, busy), (200, answer([0.1, 0.1, 0.8])))
    vlm, records = await serve(server)
    got = await read(vlm)
    assert got is not None and got.probabilities == pytest.approx((0.1, 0.1, 0.8))
    assert len(server.bodies) == 2 and (records[0].attempts, records[0].retries) == (2, 1)


async def test_an_unreadable_answer_is_an_error(serve: Any) -> None:
    partial = answer([0.5, 0.5, 0.0])
    partial["answers"][0]["probabilities"] = partial["answers"][0]["probabilities"][:2]
    vlm, _ = await serve(Server((200, partial)))
    with pytest.raises(EndpointError, match=r"unreadable decisions answer: no probability for option\(s\) 'a bicycle'"):
        await read(vlm)


async def test_a_model_that_is_no_http_endpoint_reads_nothing() -> None:
    vlm = VLMClient(ScriptedChat(script=lambda *_: {}), EndpointSettings(model="scripted"))
    assert await read(vlm) is None
