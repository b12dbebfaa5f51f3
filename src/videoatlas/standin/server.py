"""STAND-IN VLM SERVER for tests and the demo: an OpenAI-compatible endpoint that reads pixels with OCR.

It is not a vision-language model. It exists so that everything can run and be tested on a
machine without a GPU. It speaks the same protocol as vLLM's server (``GET /v1/models``,
``POST /v1/chat/completions`` with images as data URLs and ``response_format`` json_schema,
OpenAI-style error bodies, usage with ``prompt_tokens_details.cached_tokens``), perceives only
what it is sent (see :mod:`.perception` and :mod:`.policy`), and can be told to be slow or to
fail in every way a real server can, so the client's handling of each is tested over real HTTP.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import random
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from aiohttp import web

from videoatlas.standin import contract
from videoatlas.standin.filler import respond
from videoatlas.standin.perception import EncodedImage, ReadCancelled, Reader, Sight, decode_data_url
from videoatlas.standin.policy import Request
from videoatlas.standin.thinking import MODES as REASONING_MODES
from videoatlas.standin.thinking import reasoning_text
from videoatlas.standin.tokens import PrefixCache, prompt_tokens, text_pieces
from videoatlas.standin.version import STANDIN_MODEL

log = structlog.get_logger(__name__)

FAULTS = ("http500", "http429", "hang", "drop", "malformed", "schema", "range")
"""Injectable faults: server error, rate limit, a reply slower than any client timeout, a dropped
connection, JSON cut off mid-way, valid JSON that breaks the schema, and out-of-range cell ids."""


@dataclass(slots=True)
class StandinConfig:
    """How the stand-in behaves."""

    model: str = STANDIN_MODEL
    seed: int = 0
    latency_s: float = 0.0
    """Fixed delay per completion."""
    per_token_s: float = 0.0
    """Extra delay per completion token."""
    patch: int = 28
    """Pixels per visual token side: 28 (Qwen2.5-VL) or 32 (Qwen3-VL)."""
    cache_blocks: int = 32768
    """Prefix-cache capacity in 16-token blocks."""
    min_text_px: int = 9
    """Text lines shorter than this are not read (a model cannot read them at this size either)."""
    faults: dict[str, float] = field(default_factory=dict)
    """Fault name -> probability per chat request."""
    hang_s: float = 600.0
    fault_budget: int | None = None
    """Stop injecting after this many faults (None: no limit); makes "fail, then recover" exact."""
    max_images: int = 16
    """Images per prompt (vLLM ``--limit-mm-per-prompt``); more are refused with vLLM's error."""
    max_image_pixels: int = 12_845_056
    max_model_len: int = 65_536
    """Context length in tokens (vLLM ``--max-model-len``); a longer prompt is refused with vLLM's error."""
    structured_outputs_backend: contract.Backend = "auto"
    """Which vLLM structured-output backend's rules reply schemas are held to: auto, xgrammar or guidance."""
    record: Path | None = None
    """Append every chat request body to this file, one JSON line each, before any validation."""

    reasoning: str = "off"
    """Reply like a reasoning model: ``off``, ``field`` (the reasoning in the message's ``reasoning`` field and
    counted in ``usage.completion_tokens_details``, as vLLM 0.33 with a reasoning parser) or ``tags`` (in
    ``<think>`` tags before the answer, as vLLM without one). A request with ``chat_template_kwargs.enable_thinking``
    false gets no reasoning, as from Qwen3."""

    def __post_init__(self) -> None:
        unknown = set(self.faults) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown fault(s) {sorted(unknown)}; known: {', '.join(FAULTS)}")
        if self.reasoning not in REASONING_MODES:
            raise ValueError(f"reasoning must be one of {', '.join(REASONING_MODES)}")
        if self.patch not in (14, 16, 28, 32):
            raise ValueError("patch must be 14, 16, 28 or 32")
        if self.structured_outputs_backend not in contract.BACKENDS:
            raise ValueError(f"structured-outputs backend must be one of {', '.join(contract.BACKENDS)}")
        if self.max_model_len < 1 or self.max_images < 0:
            raise ValueError("max_model_len must be positive and max_images not negative")


@dataclass(slots=True)
class StandinStats:
    """Request counters, exposed at ``GET /stats``."""

    requests: int = 0
    chat_requests: int = 0
    completed: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    enable_thinking: Counter[str] = field(default_factory=Counter)
    """Chat requests by the ``enable_thinking`` they sent (``true``, ``false``, ``null`` when none)."""
    images: int = 0
    completions_by_request: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    in_flight_max: int = 0

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``GET /stats``."""
        repeated = sum(n - 1 for n in self.completions_by_request.values() if n > 1)
        return {
            "requests": self.requests,
            "chat_requests": self.chat_requests,
            "completed": self.completed,
            "errors": dict(self.errors),
            "faults": dict(self.faults),
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "completion_tokens": self.completion_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "enable_thinking": dict(self.enable_thinking),
            "images": self.images,
            "in_flight_max": self.in_flight_max,
            "distinct_requests_completed": len(self.completions_by_request),
            "repeated_completions": repeated,
            "cache_hit_rate": round(self.cached_tokens / self.prompt_tokens, 4) if self.prompt_tokens else 0.0,
        }


def _record_request(path: Path, body: object) -> None:
    """Append one request body as one JSON line (``make conformance`` checks each with vLLM's own code)."""
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n")


def _error(status: int, message: str, kind: str, param: str | None = None) -> web.Response:
    # The OpenAI error body, field for field.
    body = {"error": dict(message=message, type=kind, param=param, code=status)}
    return web.json_response(body, status=status)


class StandinServer:
    """The stand-in server's state and handlers (one instance per server)."""

    def __init__(self, config: StandinConfig | None = None, reader: Reader | None = None) -> None:
        self.config = config or StandinConfig()
        self.stats = StandinStats()
        self.cache = PrefixCache(self.config.cache_blocks)
        self._rng = random.Random(self.config.seed)
        self._reader = reader
        self._reader_lock = threading.Lock()
        self._stopping = threading.Event()

    @property
    def reader(self) -> Reader:
        """The OCR reader, loaded on first use (model load takes a second or two)."""
        with self._reader_lock:
            if self._reader is None:
                self._reader = Reader(min_text_px=self.config.min_text_px)
            return self._reader

    def stop_reading(self) -> None:
        """Give up the OCR reads queued or waiting for the recogniser: the server is stopping."""
        self._stopping.set()

    def app(self) -> web.Application:
        """The aiohttp application."""
        self._stopping.clear()
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_get("/stats", self.get_stats)
        app.router.add_post("/stats/reset", self.reset_stats)
        app.router.add_get("/health", self.health)
        app.middlewares.append(self._count)
        return app

    @web.middleware
    async def _count(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path not in ("/stats", "/stats/reset", "/health"):
            self.stats.requests += 1
        response: web.StreamResponse = await handler(request)
        return response

    async def health(self, request: web.Request) -> web.Response:
        """``GET /health``."""
        return web.json_response({"ok": True, "standin": True})

    async def models(self, request: web.Request) -> web.Response:
        """``GET /v1/models``: the one model this stand-in serves."""
        return web.json_response(
            {
                "object": "list",
                "data": [
                    {
                        "id": self.config.model,
                        "object": "model",
                        "owned_by": "videoatlas (stand-in, not a VLM)",
                    }
                ],
            }
        )

    async def get_stats(self, request: web.Request) -> web.Response:
        """``GET /stats``: request counters."""
        return web.json_response(self.stats.as_dict())

    async def reset_stats(self, request: web.Request) -> web.Response:
        """``POST /stats/reset``: zero the counters."""
        self.stats = StandinStats()
        return web.json_response({"ok": True})

    async def chat(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/chat/completions``."""
        self.stats.chat_requests += 1
        self.stats.in_flight += 1
        self.stats.in_flight_max = max(self.stats.in_flight_max, self.stats.in_flight)
        try:
            return await self._chat(request)
        finally:
            self.stats.in_flight -= 1

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            self.stats.errors["bad_json"] += 1
            return _error(400, "request body is not valid JSON", "BadRequestError")
        if self.config.record is not None:
            _record_request(self.config.record, body)
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self.stats.errors["bad_request"] += 1
            return _error(400, "'messages' must be a list", "BadRequestError", "messages")
        model = body.get("model")
        if model != self.config.model:
            self.stats.errors["model_not_found"] += 1
            return _error(404, f"The model `{model}` does not exist.", "NotFoundError", "model")
        try:
            texts, images, parts = _read_messages(body["messages"])
        except ValueError as exc:
            self.stats.errors["bad_request"] += 1
            return _error(400, str(exc), "BadRequestError", "messages")
        for img in images:
            if img.width * img.height > self.config.max_image_pixels:
                self.stats.errors["image_too_large"] += 1
                return _error(400, "image exceeds max_pixels", "BadRequestError", "messages")
        schema = _schema_of(body.get("response_format"))
        tokens = prompt_tokens(parts, self.config.patch)
        checked = self._check_contract(body, len(images), len(tokens), schema)
        if isinstance(checked, contract.Refusal):
            return _error(checked.status, checked.message, checked.kind, checked.param)
        grammar, budget = checked

        fault = self._draw_fault()
        if fault == "http500":
            return _error(500, "internal error (injected by the stand-in)", "InternalServerError")
        if fault == "http429":
            return _error(429, "rate limited (injected by the stand-in)", "RateLimitError")
        if fault == "hang":
            await asyncio.sleep(self.config.hang_s)
            return _error(504, "hung (injected by the stand-in)", "TimeoutError")
        if fault == "drop":
            if request.transport is not None:
                request.transport.abort()  # the client sees the connection reset, no response
            return web.Response(status=499)

        loop = asyncio.get_running_loop()
        see = functools.partial(self.reader.see, cancelled=self._stopping.is_set)
        try:
            sights: list[Sight] = [await loop.run_in_executor(None, see, img) for img in images]
        except ReadCancelled:
            return _error(503, "the stand-in is stopping", "ServiceUnavailableError")
        understood = Request.understand(texts, sights, schema)
        value = respond(schema, understood, self.config.seed)
        content = value if isinstance(value, str) and schema is None else json.dumps(value)
        if grammar is not None and fault is None:
            fits, why = grammar.accepts(content)
            if not fits:
                # A constrained decoder cannot produce this: a defect of the stand-in's filler, shown, never sent.
                self.stats.errors["reply_outside_grammar"] += 1
                log.error("standin_reply_outside_grammar", error=why, reply=content[:200])
                return _error(
                    500, f"the stand-in's reply does not fit the schema's grammar: {why}", "InternalServerError"
                )
        content = self._corrupt(content, fault, value)
        switch = _enable_thinking(body)
        self.stats.enable_thinking[json.dumps(switch)] += 1
        thinks = self.config.reasoning != "off" and switch is not False
        reply = _reply(content, reasoning_text(understood, value) if thinks else "", self.config.reasoning, budget)

        cached = self.cache.lookup_and_insert(tokens)
        completion = reply.completion_tokens
        delay = self.config.latency_s + self.config.per_token_s * completion
        if delay > 0:
            await asyncio.sleep(delay)
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]
        self.stats.completed += 1
        self.stats.completions_by_request[digest] += 1
        self.stats.prompt_tokens += len(tokens)
        self.stats.cached_tokens += cached
        self.stats.completion_tokens += completion
        self.stats.reasoning_tokens += reply.reasoning_tokens
        self.stats.images += len(images)
        usage: dict[str, Any] = {
            "prompt_tokens": len(tokens),
            "completion_tokens": completion,
            "total_tokens": len(tokens) + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        if self.config.reasoning == "field":  # a server with a reasoning parser counts them, zero included
            usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
        return web.json_response(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.config.model,
                "choices": [{"index": 0, "message": reply.message, "finish_reason": reply.finish_reason}],
                "usage": usage,
            }
        )

    def _check_contract(
        self, body: dict[str, Any], n_images: int, n_tokens: int, schema: dict[str, Any] | None
    ) -> contract.Refusal | tuple[contract.Grammar | None, int]:
        """The checks vLLM makes before generating: token limit, images per prompt, context length, reply schema.

        Returns the grammar replies must fit (None without a schema) and the output-token budget.
        """
        limit = contract.token_limit(body)
        refusal = limit if isinstance(limit, contract.Refusal) else None
        refusal = refusal or contract.image_limit(n_images, self.config.max_images)
        refusal = refusal or contract.context_limit(n_tokens, self.config.max_model_len)
        grammar: contract.Grammar | None = None
        if refusal is None and schema is not None:
            checked = contract.structured_outputs(schema, self.config.structured_outputs_backend)
            if isinstance(checked, contract.Refusal):
                refusal = checked
            else:
                grammar = checked.grammar
        if refusal is not None:
            self.stats.errors[f"refused_{refusal.param or 'request'}"] += 1
            log.info("standin_refused", status=refusal.status, message=refusal.message)
            return refusal
        requested = limit if isinstance(limit, int) else None
        return grammar, contract.output_budget(n_tokens, requested, self.config.max_model_len)

    def _draw_fault(self) -> str | None:
        budget = self.config.fault_budget
        if budget is not None and sum(self.stats.faults.values()) >= budget:
            return None
        for name in FAULTS:
            rate = self.config.faults.get(name, 0.0)
            if rate > 0 and self._rng.random() < rate:
                self.stats.faults[name] += 1
                return name
        return None

    @staticmethod
    def _corrupt(content: str, fault: str | None, value: Any) -> str:
        if fault == "malformed":
            return content[: max(1, len(content) // 2)]
        if fault == "schema":
            return json.dumps({"unexpected": "this object ignores the schema"})
        if fault == "range":
            return json.dumps(_out_of_range(value))
        return content


@dataclass(frozen=True, slots=True)
class _Reply:
    """The assistant message of a completion, what it cost and why it ended."""

    message: dict[str, Any]
    completion_tokens: int
    reasoning_tokens: int
    finish_reason: str


def _enable_thinking(body: dict[str, Any]) -> bool | None:
    """The request's ``chat_template_kwargs.enable_thinking`` (None when it sends none)."""
    kwargs = body.get("chat_template_kwargs")
    value = kwargs.get("enable_thinking") if isinstance(kwargs, dict) else None
    return value if isinstance(value, bool) else None


def _reply(content: str, reasoning: str, mode: str, limit: int) -> _Reply:
    """The message carrying ``content`` and, when there is any, ``reasoning`` the way ``mode`` says.

    Reasoning is generated first and spends the same budget as the answer: a reply that would pass
    ``limit`` is cut there, and one cut while still reasoning has no answer (``finish_reason`` length).
    """
    if not reasoning:
        pieces = text_pieces(content)
        if len(pieces) > limit:  # the token limit is reached mid-answer, as on any server
            return _Reply({"role": "assistant", "content": "".join(pieces[:limit])}, limit, 0, "length")
        return _Reply({"role": "assistant", "content": content}, len(pieces), 0, "stop")
    thought, answer = text_pieces(reasoning), text_pieces(content)
    tags = 2 if mode == "tags" else 0  # <think> and </think>, one special token each
    finish = "stop"
    if len(thought) + tags + len(answer) > limit:
        finish = "length"
        if len(thought) + tags >= limit:  # the budget ran out while thinking: no close, no answer
            tags //= 2
            thought = thought[: max(0, limit - tags)]
            reasoning, content, answer = "".join(thought).strip(), "", []
        else:
            answer = answer[: limit - len(thought) - tags]
            content = "".join(answer).strip()
    completion = len(thought) + tags + len(answer)
    if mode == "tags":
        closed = finish == "stop" or bool(answer)
        text = f"<think>\n{reasoning}\n</think>\n\n{content}" if closed else f"<think>\n{reasoning}"
        return _Reply({"role": "assistant", "content": text}, completion, len(thought), finish)
    message = {"role": "assistant", "content": content or None, "reasoning": reasoning}
    return _Reply(message, completion, len(thought), finish)


def _out_of_range(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        changed = {k: _out_of_range(v, k) for k, v in value.items()}
        return changed if changed != value else {**value, "cell": 10_000}
    if isinstance(value, list):
        return [_out_of_range(v, key) for v in value] or ([10_000] if "cell" in key else value)
    if isinstance(value, int) and not isinstance(value, bool) and ("cell" in key or key in ("id", "ids")):
        return 10_000
    return value


def _schema_of(response_format: Any) -> dict[str, Any] | None:
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
        return schema if isinstance(schema, dict) else None
    if response_format.get("type") == "json_object":
        return {"type": "object"}
    return None


def _read_messages(messages: list[Any]) -> tuple[list[str], list[EncodedImage], list[tuple[str, Any]]]:
    """Texts, images (not yet decoded), and the ordered token parts of a chat request."""
    texts: list[str] = []
    images: list[EncodedImage] = []
    parts: list[tuple[str, Any]] = []
    for message in messages:
        if not isinstance(message, dict):
            raise ValueError("every message must be an object")
        role = str(message.get("role", "user"))
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
            parts.append((role, content))
            continue
        if not isinstance(content, list):
            raise ValueError("message content must be a string or a list of parts")
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                texts.append(str(part.get("text", "")))
                parts.append((role, str(part.get("text", ""))))
            elif kind == "image_url":
                url = (part.get("image_url") or {}).get("url", "")
                try:
                    img = decode_data_url(url)
                except (ValueError, OSError) as exc:
                    raise ValueError(f"cannot read image: {exc}") from None
                images.append(img)
                parts.append((role, (img.sha256, img.width, img.height)))
            else:
                raise ValueError(f"unsupported content part type {kind!r}")
    return texts, images, parts


class RunningServer:
    """A stand-in server running on its own thread and event loop (for tests, the demo, benchmarks)."""

    def __init__(self, standin: StandinServer, host: str = "127.0.0.1", port: int = 0) -> None:
        self.standin = standin
        self.host = host
        self._port = port
        self._loop = asyncio.new_event_loop()
        # Its own pool for the OCR, so that stopping drops the reads still queued (see _shutdown).
        self._pool = ThreadPoolExecutor(thread_name_prefix="standin-ocr")
        self._loop.set_default_executor(self._pool)
        self._ready = threading.Event()
        self._stopped = threading.Event()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._run, name="standin-vlm", daemon=True)
        self._error: BaseException | None = None
        self.port = 0

    def start(self) -> RunningServer:
        """Start the server thread and wait until it listens."""
        self._thread.start()
        self._ready.wait(timeout=30)
        if self._error is not None:
            raise self._error
        return self

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (``http://host:port/v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._start())
        except BaseException as exc:  # reported to start()
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._shutdown())
        self._loop.close()
        self._stopped.set()

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.standin.app(), access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self._port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def _shutdown(self) -> None:
        """Cancel what is still in flight and wait for it to end, then close the listener.

        A client that went away (a run stopped with Ctrl-C) leaves handlers waiting on OCR. They are
        cancelled and awaited here, before aiohttp's own graceful wait (whose timeout can race a
        handler that finishes at that moment), so none is destroyed pending when the loop closes;
        reads not yet started are dropped rather than run at the interpreter's exit.
        """
        self._pool.shutdown(wait=False, cancel_futures=True)
        await _cancel_others()
        if self._runner is not None:
            await self._runner.cleanup()
        await _cancel_others()

    def stop(self) -> None:
        """Stop serving and wait for the thread to finish."""
        self.standin.stop_reading()
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def __enter__(self) -> RunningServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


async def _cancel_others() -> None:
    """Cancel every task on this loop but the caller's, and wait until they have ended."""
    current = asyncio.current_task()
    pending = [t for t in asyncio.all_tasks() if t is not current]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


def serve_forever(standin: StandinServer, host: str, port: int) -> None:
    """Run the stand-in in the foreground until interrupted (``videoatlas standin``)."""
    web.run_app(standin.app(), host=host, port=port, access_log=None, print=None)
