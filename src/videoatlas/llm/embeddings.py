"""Vectors from an OpenAI-compatible ``POST /v1/embeddings`` route (vLLM serves it for pooling models).

Texts go as ``input`` (a list, in batches); an image goes as a one-message chat conversation in
``messages`` with one ``image_url`` part, the form vLLM's embeddings route takes for multimodal
embedding models (one vector per conversation). Every vector comes back scaled to unit length, so
a dot product is a cosine similarity.

The route may live on another server than the chat model (vLLM serves one model per server):
``VIDEOATLAS_EMBEDDINGS_URL`` names it, else the chat endpoint's URL is used. Requests go through
the one transport policy (:mod:`videoatlas.llm.transport`), as chat calls do: connection errors,
timeouts, 408, 409, 429 and 5xx are retried with backoff, and a server that answered before and
goes away (a restart) is waited for up to the endpoint's patience, then
:class:`~videoatlas.errors.EndpointDownError`. A server without the route, or one that does not
serve the model, is one clear :class:`~videoatlas.errors.EndpointError`.
"""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np

from videoatlas.errors import EndpointError, EndpointUnreachableError, ModelNotServedError
from videoatlas.llm.outage import EndpointWatch
from videoatlas.llm.settings import DEFAULT_PATIENCE_S, EndpointSettings
from videoatlas.llm.transport import Transport

EMBEDDINGS_URL_VAR = "VIDEOATLAS_EMBEDDINGS_URL"
"""The environment variable naming the embeddings server's base URL (``http://host:port/v1``)."""


@dataclass(slots=True)
class EmbeddingTotals:
    """What a client has asked for so far."""

    requests: int = 0
    """HTTP requests that returned vectors."""
    inputs: int = 0
    """Texts and images embedded."""
    prompt_tokens: int = 0
    retries: int = 0


class EmbeddingsClient:
    """Embeds texts and images through one server's ``/v1/embeddings`` with one model.

    ``watch`` waits out the server's outages (default: the shared watch of its base URL, with
    ``patience_s``); ``transport`` replaces the HTTP transport (tests).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "EMPTY",
        timeout_s: float = 120.0,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        backoff_cap_s: float = 8.0,
        patience_s: float = DEFAULT_PATIENCE_S,
        batch: int = 32,
        transport: httpx.AsyncBaseTransport | None = None,
        watch: EndpointWatch | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.batch = max(1, batch)
        self.totals = EmbeddingTotals()
        settings = EndpointSettings(
            base_url=self.base_url, model=model, api_key=api_key, timeout_s=timeout_s, max_retries=max_retries,
            backoff_s=backoff_s, backoff_cap_s=backoff_cap_s, patience_s=patience_s,
        )  # fmt: skip
        self.transport = Transport(settings, "embedding_call", watch=watch, sleep=sleep, seed=0)
        """How requests reach the server: retries, backoff, outages (the same policy as chat calls)."""
        headers = {"Authorization": f"Bearer {api_key}"} if api_key and api_key != "EMPTY" else {}
        self._http = httpx.AsyncClient(timeout=timeout_s, headers=headers, transport=transport)

    @classmethod
    def for_endpoint(
        cls, endpoint: EndpointSettings, model: str, env: Mapping[str, str] | None = None
    ) -> EmbeddingsClient:
        """A client for ``model`` on the embeddings server (``VIDEOATLAS_EMBEDDINGS_URL``, else the chat endpoint)."""
        source = os.environ if env is None else env
        url = source.get(EMBEDDINGS_URL_VAR, "").strip() or endpoint.base_url
        return cls(
            url,
            model,
            api_key=endpoint.api_key,
            timeout_s=endpoint.timeout_s,
            max_retries=endpoint.max_retries,
            backoff_s=endpoint.backoff_s,
            backoff_cap_s=endpoint.backoff_cap_s,
            patience_s=endpoint.patience_s,
        )

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._http.aclose()

    async def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector per text, in order (``(len(texts), dim)`` float32)."""
        rows: list[np.ndarray] = []
        for first in range(0, len(texts), self.batch):
            chunk = list(texts[first : first + self.batch])
            rows.append(await self._post({"model": self.model, "input": chunk, "encoding_format": "float"}, len(chunk)))
        return np.concatenate(rows) if rows else np.zeros((0, 0), dtype=np.float32)

    async def embed_image(self, jpeg: bytes) -> np.ndarray:
        """The unit vector of one JPEG image (``(dim,)`` float32)."""
        url = "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")
        message = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}
        body = {"model": self.model, "messages": [message], "encoding_format": "float"}
        vectors = await self._post(body, 1)
        first: np.ndarray = vectors[0]
        return first

    async def _post(self, body: dict[str, Any], expected: int) -> np.ndarray:
        url = f"{self.base_url}/embeddings"

        async def request() -> httpx.Response:
            response = await self._http.post(url, json=body)
            if response.status_code != 200:
                raise httpx.HTTPStatusError(f"HTTP {response.status_code}", request=response.request, response=response)
            return response

        def retried() -> None:
            self.totals.retries += 1

        try:
            response = await self.transport.send(request, self._exhausted, retried)
        except httpx.HTTPStatusError as exc:  # a refusal
            raise self._refused(exc.response) from None
        return self._vectors(response, expected)

    def _exhausted(self, exc: Exception, attempts: int) -> EndpointError:
        if isinstance(exc, httpx.HTTPStatusError):
            return EndpointError(
                f"the embeddings endpoint at {self.base_url} failed after {attempts} attempts: "
                f"HTTP {exc.response.status_code} {_message(exc.response)}"
            )
        return EndpointUnreachableError(
            f"cannot reach the embeddings endpoint at {self.base_url} after {attempts} attempts: "
            f"{type(exc).__name__}: {exc}"
        )

    def _refused(self, response: httpx.Response) -> EndpointError:
        message = _message(response)
        if response.status_code == 404 and "model" in message.lower() and "exist" in message.lower():
            return ModelNotServedError(
                f"embedding model {self.model!r} is not served at {self.base_url}: {message} "
                f"(name it with the agent's embedding_model setting, or point {EMBEDDINGS_URL_VAR} at its server)"
            )
        if response.status_code in (404, 405):
            return EndpointError(
                f"the endpoint at {self.base_url} has no embeddings route (POST /embeddings: HTTP "
                f"{response.status_code}); serve an embedding model (vLLM --runner pooling) and point "
                f"{EMBEDDINGS_URL_VAR} at it"
            )
        return EndpointError(
            f"HTTP {response.status_code}, the embeddings endpoint refused the request: {message} "
            f"(endpoint {self.base_url}, model {self.model!r})"
        )

    def _vectors(self, response: httpx.Response, expected: int) -> np.ndarray:
        try:
            payload = response.json()
            data = sorted(payload["data"], key=lambda d: int(d["index"]))
            matrix = np.asarray([d["embedding"] for d in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EndpointError(f"the embeddings endpoint at {self.base_url} sent an unreadable reply: {exc}") from None
        if matrix.ndim != 2 or matrix.shape[0] != expected:
            raise EndpointError(
                f"the embeddings endpoint at {self.base_url} sent {matrix.shape[0] if matrix.ndim else 0} "
                f"vectors for {expected} inputs"
            )
        usage = payload.get("usage") or {}
        self.totals.requests += 1
        self.totals.inputs += expected
        self.totals.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        unit: np.ndarray = matrix / np.where(norms > 0, norms, 1.0)
        return unit


def _message(response: httpx.Response) -> str:
    """The server's own error message (OpenAI's ``error.message``, FastAPI's ``detail``), on one line."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip().splitlines()[0][:300] if response.text.strip() else ""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(error, str):
            return error[:300]
        if body.get("detail"):
            return str(body["detail"])[:300]
        if body.get("message"):
            return str(body["message"])[:300]
    return str(body)[:300]
