"""Every route rides out an endpoint restart alike, over real HTTP: chat, model listing, embeddings, transcription.

A fake OpenAI-compatible server listens on a loopback port; the test stops it (with a request in
flight, as a killed vLLM drops its connections) and starts it again on the same port. A request the
server dropped is sent again once the server answers, and answered once; a server that stays away
past the patience stops the request as an outage (exit 75); one that never answered fails fast
with the route's own error.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import numpy as np
import pytest
from aiohttp import web
from pydantic import BaseModel

from videoatlas.errors import EndpointDownError, EndpointError
from videoatlas.llm.chat_model import OpenAICompatibleChat
from videoatlas.llm.client import VLMClient
from videoatlas.llm.embeddings import EmbeddingsClient
from videoatlas.llm.outage import watch_for
from videoatlas.llm.settings import EndpointSettings
from videoatlas.llm.transcribe import Transcriber

pytestmark = pytest.mark.e2e

AWAY_S = 1.5
"""How long the server is away: far past a retry budget of one retry after 10 ms, well within the patience."""
ROUTES = ["chat", "models", "embeddings", "transcription"]


class Pick(BaseModel):
    cell: int


class Endpoint:
    """A fake OpenAI-compatible server on a fixed loopback port, stopped and started again by the test."""

    def __init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.answered: Counter[str] = Counter()
        """Requests answered, by route (the watch's probes of ``/models``, sent with httpx, are not counted)."""
        self.refuse = 0
        """When set, every route answers this HTTP status."""
        self.hang_next = False
        self.hung = asyncio.Event()
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_post("/v1/audio/transcriptions", self._transcriptions)
        self._runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def stop(self) -> None:
        """Go away: stop listening and drop every open connection, a request in flight included."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _answer(self, route: str, body: dict[str, Any]) -> web.Response:
        if self.hang_next:  # taken, never answered: the server goes away under it
            self.hang_next = False
            self.hung.set()
            await asyncio.Event().wait()
        if self.refuse:
            return web.json_response({"error": {"message": "refused (test)", "code": self.refuse}}, status=self.refuse)
        self.answered[route] += 1
        return web.json_response(body)

    async def _models(self, request: web.Request) -> web.Response:
        listing = {"object": "list", "data": [{"id": "m", "object": "model", "created": 0, "owned_by": "test"}]}
        if request.headers.get("User-Agent", "").startswith("python-httpx"):
            return web.json_response(listing)  # the watch's probe, not the client's listing: not counted
        return await self._answer("models", listing)

    async def _chat(self, request: web.Request) -> web.Response:
        await request.read()
        message = {"role": "assistant", "content": '{"cell": 3}'}
        return await self._answer(
            "chat",
            {
                "id": "c", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )  # fmt: skip

    async def _embeddings(self, request: web.Request) -> web.Response:
        inputs = (await request.json())["input"]
        data = [{"index": i, "object": "embedding", "embedding": [1.0, 0.0]} for i in range(len(inputs))]
        return await self._answer("embeddings", {"object": "list", "data": data, "usage": {"prompt_tokens": 1}})

    async def _transcriptions(self, request: web.Request) -> web.Response:
        await request.post()
        segments = [{"id": 0, "start": 0.0, "end": 1.0, "text": " hello"}]
        return await self._answer("transcription", {"text": "hello", "segments": segments})


Request = Callable[[], Awaitable[Any]]


async def clients(endpoint: Endpoint, route: str, patience: float) -> AsyncIterator[Request]:
    """One request of ``route`` to ``endpoint``, as the product sends it (one retry after 10 ms at most)."""
    settings = EndpointSettings(
        base_url=endpoint.base_url, model="m", max_retries=1, backoff_s=0.01, patience_s=patience
    )
    if route in ("chat", "models"):
        chat = OpenAICompatibleChat(settings=settings)
        client = VLMClient(chat, settings)
        yield (lambda: client.ask(Pick, system="s", text="t")) if route == "chat" else client.check_model
        await chat.aclose()
    elif route == "embeddings":
        embedder = EmbeddingsClient(endpoint.base_url, "m", max_retries=1, backoff_s=0.01, patience_s=patience)
        yield lambda: embedder.embed_texts(["query: a harbor"])
        await embedder.aclose()
    else:
        ear = Transcriber(settings, "whisper")
        yield lambda: ear.transcribe(np.zeros(16_000, np.int16), 0.0, 16_000)
        await ear.close()


async def with_client(
    endpoint: Endpoint, route: str, patience: float, test: Callable[[Request], Awaitable[None]]
) -> None:
    async for request in clients(endpoint, route, patience):
        await test(request)


@pytest.fixture
async def endpoint() -> AsyncIterator[Endpoint]:
    server = Endpoint()
    await server.start()
    yield server
    await server.stop()


@pytest.mark.parametrize("route", ROUTES)
async def test_a_request_dropped_by_a_restart_is_sent_again_once_the_endpoint_is_back(
    endpoint: Endpoint, route: str
) -> None:
    async def test(request: Request) -> None:
        await request()  # the endpoint answered: from now on it is waited for
        endpoint.hang_next = True
        pending = asyncio.ensure_future(request())
        await endpoint.hung.wait()
        began = time.monotonic()
        await endpoint.stop()  # the request in flight loses its connection
        await asyncio.sleep(AWAY_S)
        await endpoint.start()
        await pending
        assert time.monotonic() - began >= AWAY_S
        # Answered once each: the dropped request once more, nothing twice.
        assert endpoint.answered[route] == 2
        watch = watch_for(EndpointSettings(base_url=endpoint.base_url))
        assert watch.outages == 1 and watch.down_for() is None

    await with_client(endpoint, route, 60.0, test)


@pytest.mark.parametrize("route", ROUTES)
async def test_an_endpoint_away_past_the_patience_stops_the_request_as_an_outage(
    endpoint: Endpoint, route: str
) -> None:
    async def test(request: Request) -> None:
        await request()
        await endpoint.stop()
        began = time.monotonic()
        with pytest.raises(EndpointDownError, match=r"did not come back within 1 s \(--endpoint-patience\)") as caught:
            await request()
        assert caught.value.exit_code == 75 and time.monotonic() - began >= 1.0
        assert endpoint.answered[route] == 1

    await with_client(endpoint, route, 1.0, test)


OWN_ERRORS = {
    "chat": "VLM endpoint .* failed after 2 attempts: connection error",
    "models": "cannot reach the VLM endpoint at .* after 2 attempts: connection error",
    "embeddings": "cannot reach the embeddings endpoint at .* after 2 attempts: ConnectError",
    "transcription": "transcription failed after 2 tries: Connection error",
}


@pytest.mark.parametrize("route", ROUTES)
async def test_an_endpoint_that_never_answered_fails_fast_with_the_routes_own_error(
    endpoint: Endpoint, route: str
) -> None:
    await endpoint.stop()  # a wrong URL, a server not started: nothing to wait for

    async def test(request: Request) -> None:
        began = time.monotonic()
        with pytest.raises(EndpointError, match=OWN_ERRORS[route]) as caught:
            await request()
        assert caught.value.exit_code == 5 and time.monotonic() - began < 1.0

    await with_client(endpoint, route, 60.0, test)


REFUSALS = {
    "chat": "HTTP 400, the VLM endpoint refused",
    "models": "cannot reach the VLM endpoint at .* after 1 attempt: HTTP 400",
    "embeddings": "HTTP 400, the embeddings endpoint refused the request",
    "transcription": "transcription refused",
}


@pytest.mark.parametrize("route", ROUTES)
async def test_a_refusal_is_sent_once_and_told_in_the_routes_own_words(endpoint: Endpoint, route: str) -> None:
    async def test(request: Request) -> None:
        await request()
        endpoint.refuse = 400
        with pytest.raises(EndpointError, match=REFUSALS[route]) as caught:
            await request()
        assert caught.value.exit_code == 5 and endpoint.answered[route] == 1
        assert watch_for(EndpointSettings(base_url=endpoint.base_url)).outages == 0

    await with_client(endpoint, route, 60.0, test)
