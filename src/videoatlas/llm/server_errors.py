"""What a server's error says, in one line: its message, what a refusal was about, where a wrong URL should point."""

from __future__ import annotations

from typing import Any

import openai
from pydantic import ValidationError


def route_hint(exc: BaseException, base_url: str) -> str:
    """For an HTTP 404 on the endpoint's routes: where to look.

    A base URL without the ``/v1`` that OpenAI-compatible servers serve under gets that suggestion; one
    with it is a server that does not serve the OpenAI routes (``GET /v1/models``) at all.
    """
    if not isinstance(exc, openai.NotFoundError):
        return ""
    if not base_url.rstrip("/").endswith("/v1"):
        return f"; did you mean {base_url.rstrip('/')}/v1?"
    return (
        f"; the server at {base_url} does not serve the OpenAI API's routes (GET /models): it is not an "
        "OpenAI-compatible server such as vLLM's (`vllm serve`), or the URL names another service"
    )


def short_error(exc: ValidationError) -> str:
    """The first three validation problems of a reply, each as ``field: message``."""
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "reply"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


REFUSED_PARAMS = {
    "image": "the number of images in the prompt (the server's --limit-mm-per-prompt)",
    "input_tokens": "the prompt's length (the server's --max-model-len)",
    "input_text": "the prompt's length (the server's --max-model-len)",
    "max_completion_tokens": "the output-token limit",
    "max_tokens": "the output-token limit",
    "messages": "the messages",
    "response_format": "the reply schema",
}


def error_fields(exc: openai.APIStatusError) -> dict[str, Any]:
    """The server's error object: ``{"error": {...}}`` (vLLM, OpenAI) or the fields at the top of the body."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    return error if isinstance(error, dict) else body


def refused_feature(exc: openai.APIStatusError, schema: str) -> str:
    """What a refusal was about: the error's ``param`` where the server names one, else the reply schema."""
    param = error_fields(exc).get("param")
    if isinstance(param, str) and param in REFUSED_PARAMS:
        feature = REFUSED_PARAMS[param]
        return f"reply schema {schema}" if param == "response_format" and schema else feature
    message = server_message(exc).lower()
    if schema and any(word in message for word in ("grammar", "schema", "json", "structured")):
        return f"reply schema {schema} (structured outputs)"
    return f"the request for {schema}" if schema else "the request"


def server_message(exc: openai.APIStatusError) -> str:
    """The server's own message, as its error body gives it."""
    return str(error_fields(exc).get("message") or exc.message)


def describe(exc: BaseException) -> str:
    """A failed request in a few words: timeout, connection error (and its cause), or the HTTP status and message."""
    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return f"connection error ({type(cause).__name__ if cause else 'no response'})"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {server_message(exc)}"
    return f"{type(exc).__name__}: {exc}"
