"""``POST /v1/chat/completions``: vLLM's chat route, answered from what the stand-in reads in the images.

A request is held to vLLM's contract (:mod:`.contract`, :mod:`.tools`), given any fault the server injects
(:mod:`.faults`), perceived (:mod:`.perception`) and answered by the policy (:mod:`.policy`): with a tool call,
a JSON object asked for in words (:mod:`.jsontext`), the reply schema filled, or text. The reply fits the
schema's grammar, carries reasoning as the server is configured to (:mod:`.thinking`), counts its usage as vLLM
does and, asked for ``logprobs``, lists its tokens (:mod:`.logprobs`). Content faults never spoil tool calls.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web

from videoatlas_standin import contract, faults, jsontext, logprobs, policy, record, tools
from videoatlas_standin.context import ServerContext
from videoatlas_standin.contract import Refusal
from videoatlas_standin.messages import Prompt, read_prompt
from videoatlas_standin.perception import ReadCancelled, Sight
from videoatlas_standin.thinking import reasoning_text
from videoatlas_standin.tokens import text_pieces

log = structlog.get_logger(__name__)


def routes(standin: ServerContext) -> list[web.RouteDef]:
    """The chat route, bound to ``standin``."""
    return [web.post(record.CHAT, functools.partial(chat, standin))]


SLOW_STAGE_S = 8.0
"""A stage of a reply (reading an image's text) that runs longer says so in the log, this often."""


async def _watched(stage: str, work: Any) -> Any:
    """``work`` awaited; while it runs past :data:`SLOW_STAGE_S`, a warning every so often says what is slow.

    The time a VLM spends on a GPU the stand-in spends reading pixels: whoever waits should see whose wait it is.
    """
    task = asyncio.ensure_future(work)
    began = time.monotonic()
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=SLOW_STAGE_S)
            if done:
                return task.result()
            log.warning("standin_slow_stage", stage=stage, seconds=round(time.monotonic() - began))
    finally:
        task.cancel()  # a reply the client gave up on: nothing waits for it any more


async def chat(standin: ServerContext, request: web.Request) -> web.StreamResponse:
    """``POST /v1/chat/completions``."""
    standin.stats.chat_requests += 1
    standin.stats.in_flight += 1
    standin.stats.in_flight_max = max(standin.stats.in_flight_max, standin.stats.in_flight)
    try:
        return await _chat(standin, request)
    finally:
        standin.stats.in_flight -= 1


async def _chat(standin: ServerContext, request: web.Request) -> web.StreamResponse:
    body = await standin.json_body(request, record.CHAT)
    if isinstance(body, web.Response):
        return body
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return standin.refuse(Refusal(400, "'messages' must be a list", param="messages"), "bad_request")
    top = logprobs.requested(body)  # vLLM's request model checks these before anything else
    if isinstance(top, Refusal):
        return standin.refuse(top)
    if top is not None:
        standin.stats.logprobs_requests += 1
    model = body.get("model")
    if model != standin.config.model:
        refusal = Refusal(404, f"The model `{model}` does not exist.", "NotFoundError", "model")
        return standin.refuse(refusal, "model_not_found")
    asked = tools.read(body)
    if isinstance(asked, Refusal):
        return standin.refuse(asked)
    try:
        prompt = read_prompt(body["messages"], standin.config.patch)
    except ValueError as exc:
        return standin.refuse(Refusal(400, str(exc), param="messages"), "bad_request")
    texts, images, tokens = prompt.texts, prompt.images, prompt.tokens
    if any(img.width * img.height > standin.config.max_image_pixels for img in images):
        return standin.refuse(Refusal(400, "image exceeds max_pixels", param="messages"), "image_too_large")
    schema = _schema_of(body.get("response_format"))
    forced = (tools.unavailable(asked, standin.config.auto_tools) or tools.forced_schema(asked)) if asked else None
    if isinstance(forced, Refusal):
        return standin.refuse(forced, f"refused_{forced.param or 'tool_choice'}")
    if forced is not None:
        schema = None  # a forced call overrides response_format, as vLLM's tool parser does
    checked = _check_contract(standin, body, prompt, forced or schema, top)
    if isinstance(checked, Refusal):
        return standin.refuse(checked)
    grammar, budget = checked

    fault = standin.draw_fault()
    if fault == "hang":
        await asyncio.sleep(standin.config.hang_s)
    if fault in faults.ERRORS:
        return faults.ERRORS[fault].response()
    if fault == "drop":
        if request.transport is not None:
            request.transport.abort()  # the client sees the connection reset, no response
        return web.Response(status=499)

    loop = asyncio.get_running_loop()
    see = functools.partial(standin.reader.see, cancelled=standin.stopping)
    try:
        sights: list[Sight] = []
        for n, img in enumerate(images, 1):
            stage = f"reading the text of image {n} of {len(images)} ({img.width}x{img.height} px) on the CPU (OCR)"
            sights.append(await _watched(stage, loop.run_in_executor(None, see, img)))
    except ReadCancelled:
        return Refusal(503, "the stand-in is stopping", "ServiceUnavailableError").response()
    switch = _enable_thinking(body)
    standin.stats.enable_thinking[json.dumps(switch)] += 1
    thinks = standin.config.reasoning != "off" and switch is not False
    decided = await loop.run_in_executor(None, _decide, texts, sights, schema, asked, top is not None)
    if asked is not None and decided.call is not None:
        calls = [decided.call]
        standin.stats.tool_calls += 1
        text = tools.call_text(asked, calls)
        outside = _outside(standin, grammar, text, "call", "tools'")
        if outside is not None:
            return outside
        reasoning = reasoning_text(decided.reading, text) if thinks and standin.config.reasoning == "field" else ""
        reply = _call_reply(asked, calls, text, reasoning, budget)
        listed = None if top is None else _call_logprobs(reply, text, top)
        return await _completion(standin, tokens, len(images), body, reply, listed)
    value = decided.value
    # Raw UTF-8, as a constrained decoder writes it: the JSON grammar takes no \u escape of a read character.
    content = value if isinstance(value, str) and schema is None else json.dumps(value, ensure_ascii=False)
    outside = _outside(standin, grammar if fault is None else None, content, "reply", "schema's")
    if outside is not None:
        return outside
    content = faults.corrupt(content, fault, value)
    reasoning = reasoning_text(decided.reading, value) if thinks else ""
    reply = _reply(content, reasoning, standin.config.reasoning, budget)
    listed = None if top is None else _logprobs(reply, value, decided.answer, top)
    return await _completion(standin, tokens, len(images), body, reply, listed)


def _outside(
    standin: ServerContext, grammar: contract.Grammar | None, text: str, what: str, whose: str
) -> web.Response | None:
    """The 500 for a reply outside the grammar: a constrained decoder cannot write it, so it is a stand-in defect."""
    fits, why = grammar.accepts(text) if grammar is not None else (True, "")
    if fits:
        return None
    log.error(f"standin_{what}_outside_grammar", error=why, reply=text[:200])
    refusal = Refusal(500, f"the stand-in's {what} does not fit the {whose} grammar: {why}", "InternalServerError")
    return standin.refuse(refusal, "reply_outside_grammar")


@dataclass(frozen=True, slots=True)
class _Decision:
    """The policy's reading of a request and its reply: a value for the content, or the call to make."""

    reading: policy.Reading
    value: Any
    call: tuple[tools.Tool, dict[str, Any]] | None
    answer: tuple[str, list[tuple[Any, float]]] | None = None
    """The top-level field of the reply that holds the answer, and each value it could have held with its share."""


def _decide(
    texts: list[tuple[str, str]],
    sights: list[Sight],
    schema: dict[str, Any] | None,
    asked: tools.ToolRequest | None,
    shares: bool,
) -> _Decision:
    """The policy's reading of the request and its reply (``shares``: where the answer goes, how sure); off the loop."""
    offered = list(asked.tools) if asked is not None else []
    reading = policy.understand(texts, sights, [schema] if schema is not None else [t.parameters for t in offered])
    if asked is not None:  # rule 7: a request with tools is answered with a call
        pick = 0 if len(offered) == 1 else reading.choose([t.name for t in offered], [t.description for t in offered])
        tool = asked.tool(asked.named) if asked.named is not None else offered[pick]
        arguments = policy.fill(reading, tool.parameters)
        return _Decision(reading, None, (tool, arguments if isinstance(arguments, dict) else {}))
    written = [text for role, text in texts if role != "tool"]
    asked_in_words = jsontext.asked_schema(written, len(reading.choices) if reading.lettered else 0)
    filled = schema if schema is not None else asked_in_words
    if filled is None:
        return _Decision(reading, reading.reply_text(), None)
    value = policy.fill(reading, filled)
    return _Decision(reading, value, None, _answer_field(reading, filled, value) if shares else None)


def _answer_field(
    reading: policy.Reading, schema: dict[str, Any], value: Any
) -> tuple[str, list[tuple[Any, float]]] | None:
    """The first top-level field of ``value`` that holds the answer, and the values it could have held."""
    if not isinstance(value, dict):
        return None
    filler = policy.Filler(reading, schema)
    fields = filler.schema.resolve(schema).get("properties") or {}
    for key in value:
        mixture = filler.answer_mixture(fields.get(key), key) if key in fields else None
        if mixture is not None:
            return key, mixture
    return None


def _logprobs(
    reply: _Reply, value: Any, answer: tuple[str, list[tuple[Any, float]]] | None, top: int
) -> dict[str, Any]:
    """``choices[0].logprobs`` of a written reply: its thinking (when it thought), then its content."""
    message = reply.message
    thought, text, closed = message.get("reasoning"), message.get("content") or "", True
    opened = thought is None and text.startswith(logprobs.THINK_OPEN)  # thinking in tags, in the content
    if opened:
        thought, close, text = text[len(logprobs.THINK_OPEN) :].partition(logprobs.THINK_CLOSE)
        closed = bool(close)
    elif thought is not None:
        closed = message.get("content") is not None
    at = logprobs.answer_in(text, value, *answer) if answer is not None else None
    return logprobs.content(thought or None, opened, closed, text, at, top)


def _call_logprobs(reply: _Reply, text: str, top: int) -> dict[str, Any]:
    """``choices[0].logprobs`` of a reply that calls tools: its thinking, then the call as decoded (all certain)."""
    thought = reply.message.get("reasoning")
    spent = len(text_pieces(thought)) + 1 if thought else 0
    decoded = "".join(text_pieces(text)[: max(0, reply.completion_tokens - spent)])
    return logprobs.content(thought or None, False, bool(decoded), decoded, None, top)


async def _completion(
    standin: ServerContext, tokens: list[Any], n_images: int, body: dict[str, Any], reply: _Reply, listed: Any
) -> web.Response:
    """The chat completion carrying ``reply``, after the configured latency, its usage counted (in the stats too)."""
    delay = standin.config.latency_s + standin.config.per_token_s * reply.completion_tokens
    if delay > 0:
        await asyncio.sleep(delay)
    cached = standin.cache.lookup_and_insert(tokens)
    completion = reply.completion_tokens
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]
    standin.stats.completed += 1
    standin.stats.completions_by_request[digest] += 1
    standin.stats.prompt_tokens += len(tokens)
    standin.stats.cached_tokens += cached
    standin.stats.completion_tokens += completion
    standin.stats.reasoning_tokens += reply.reasoning_tokens
    standin.stats.images += n_images
    usage: dict[str, Any] = {
        "prompt_tokens": len(tokens),
        "completion_tokens": completion,
        "total_tokens": len(tokens) + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }
    if standin.config.reasoning == "field":  # a server with a reasoning parser counts them, zero included
        usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
    head = {"id": f"chatcmpl-{uuid.uuid4().hex[:16]}", "object": "chat.completion", "created": int(time.time())}
    choice = {"index": 0, "message": reply.message, "logprobs": listed, "finish_reason": reply.finish_reason}
    return web.json_response({**head, "model": standin.config.model, "choices": [choice], "usage": usage})


def _check_contract(
    standin: ServerContext, body: dict[str, Any], prompt: Prompt, schema: dict[str, Any] | None, top: int | None
) -> Refusal | tuple[contract.Grammar | None, int]:
    """The checks vLLM makes before generating: token limit, images, context, logprobs (``top``), reply schema.

    Passed, the grammar replies must fit (None without a schema) and the output-token budget.
    """
    limit = contract.token_limit(body)
    refusal = limit if isinstance(limit, Refusal) else None
    refusal = refusal or contract.image_limit(len(prompt.images), standin.config.max_images)
    refusal = refusal or contract.context_limit(len(prompt.tokens), standin.config.max_model_len)
    if top is not None:  # the engine's SamplingParams.verify: logprobs first, then structured outputs
        refusal = refusal or logprobs.too_many(top, standin.config.patch)
    grammar: contract.Grammar | None = None
    if refusal is None and schema is not None:
        checked = contract.structured_outputs(schema, standin.config.structured_outputs_backend)
        refusal, grammar = (checked, None) if isinstance(checked, Refusal) else (None, checked.grammar)
    if refusal is not None:
        log.info("standin_refused", status=refusal.status, message=refusal.message)
        return refusal
    requested = limit if isinstance(limit, int) else None
    return grammar, contract.output_budget(len(prompt.tokens), requested, standin.config.max_model_len)


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
    """The message carrying ``content`` and any ``reasoning`` the way ``mode`` says, cut at ``limit`` tokens.

    Reasoning comes first and spends the same budget: a reply cut while still reasoning has no answer.
    """
    if not reasoning:
        pieces = text_pieces(content)
        if len(pieces) > limit:  # the token limit is reached mid-answer, as on any server
            return _Reply({"role": "assistant", "content": "".join(pieces[:limit])}, limit, 0, "length")
        return _Reply({"role": "assistant", "content": content}, len(pieces), 0, "stop")
    thought, answer = text_pieces(reasoning), text_pieces(content)
    # <think> and </think>, one special token each; with a reasoning parser (Qwen3.5) the chat template opens the
    # thinking and the model writes only its close
    tags = 2 if mode == "tags" else 1
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


def _call_reply(
    asked: tools.ToolRequest, calls: list[tuple[tools.Tool, dict[str, Any]]], text: str, reasoning: str, limit: int
) -> _Reply:
    """The message carrying ``calls`` (decoded as ``text``), cut like any reply at the token ``limit``.

    A forced call's content is empty, an automatic one's None; a cut named call keeps its cut arguments, a cut
    list of calls parses to none.
    """
    thought, pieces = text_pieces(reasoning), text_pieces(text)
    close = 1 if reasoning else 0  # </think>, as in a written reply
    cut = len(thought) + close + len(pieces) > limit
    message: dict[str, Any] = {"role": "assistant", "content": None if asked.mode == "auto" else ""}
    if reasoning:
        message["reasoning"] = "".join(thought[:limit]).strip()
    kept = max(0, limit - len(thought) - close)
    if not cut:
        message["tool_calls"] = tools.tool_calls(calls)
    elif asked.mode == "named" and kept:
        named = tools.tool_calls(calls)
        named[0]["function"]["arguments"] = "".join(pieces[:kept])
        message["tool_calls"] = named
    completion = min(limit, len(thought) + close + len(pieces))
    finish = (
        "length" if cut else "stop" if asked.mode == "named" else "tool_calls"
    )  # a named function: "stop", as OpenAI
    return _Reply(message, completion, min(len(thought), limit), finish)


def _schema_of(response_format: Any) -> dict[str, Any] | None:
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind == "json_object":
        return {"type": "object"}
    schema = (response_format.get("json_schema") or {}).get("schema") if kind == "json_schema" else None
    return schema if isinstance(schema, dict) else None
