"""Structured calls to the VLM: schema in, validated object out, every attempt counted.

A call sends the system prompt first, then the images, then the text that changes from call to
call, so that a server's prefix cache can reuse the stable beginning. The reply must satisfy a
pydantic schema, sent as ``response_format`` (json_schema). A reply that does not parse is first
repaired locally (fences, stray text, trailing commas); failing that, the model is asked once
more with the validation error; failing that, :class:`ModelReplyError`. Never a random fallback.

Requests (the calls, the model listing, and the reads of ``/v1/decisions``: :meth:`VLMClient.read_choice`)
go through the one transport policy (:mod:`videoatlas.llm.transport`): connection errors, timeouts, HTTP
408, 409, 429 and 5xx are retried with exponential backoff and full jitter, other 4xx answers are not; an
endpoint that answered before and stops answering is waited for instead, and past the patience its calls
raise :class:`~videoatlas.errors.EndpointDownError`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx
import openai
import structlog
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ValidationError

from videoatlas.errors import (
    EndpointError,
    EndpointUnreachableError,
    ModelNotServedError,
    ModelReplyError,
    VideoAtlasError,
)
from videoatlas.llm import decisions
from videoatlas.llm.chat_model import OpenAICompatibleChat
from videoatlas.llm.images import ImagePart, check_limits, image_tokens, merged_patch_px
from videoatlas.llm.logprobs import TOP_LOGPROBS, TokenLogprob
from videoatlas.llm.outage import EndpointWatch
from videoatlas.llm.reasoning import estimate_tokens, split_reasoning
from videoatlas.llm.records import CANCELLED, CallRecord, CallTotals, Outcome
from videoatlas.llm.repair import repair_json
from videoatlas.llm.schemas import response_format
from videoatlas.llm.server_errors import describe, refused_feature, route_hint, server_message, short_error
from videoatlas.llm.settings import DEFAULT_BASE_URL, EndpointSettings
from videoatlas.llm.transport import Transport
from videoatlas.prompts import Template, builtin_template

log = structlog.get_logger(__name__)
T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Reply(Generic[T]):
    """A validated reply and the record of what it took."""

    value: T
    record: CallRecord
    tokens: tuple[TokenLogprob, ...] = ()
    """The reply's tokens with their log-probabilities, when the call asked for them (``logprobs``)."""


@dataclass(frozen=True, slots=True)
class ChoiceRead:
    """Each option's probability as the endpoint's ``/v1/decisions`` read a text, and the record of that call."""

    probabilities: tuple[float, ...]
    """P(option i), in the order asked, summing to 1 (:func:`~videoatlas.llm.decisions.read_choice_answer`)."""
    record: CallRecord


def _usage(message: BaseMessage) -> tuple[int, int, int]:
    usage = getattr(message, "usage_metadata", None) or {}
    details = usage.get("input_token_details") or {}
    return (
        int(usage.get("input_tokens", 0)),
        int(usage.get("output_tokens", 0)),
        int(details.get("cache_read", 0)),
    )


class VLMClient:
    """Structured, budgeted, counted access to one chat model.

    ``model`` is any langchain-core chat model: :class:`OpenAICompatibleChat` in production and
    end-to-end tests, a fake chat model in unit tests. ``watch`` waits out the endpoint's outages;
    by default an :class:`OpenAICompatibleChat` gets its endpoint's shared watch (made on the first
    call, in the caller's event loop), any other model none.
    """

    def __init__(
        self,
        model: BaseChatModel,
        settings: EndpointSettings,
        on_record: Callable[[CallRecord], None] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_start: Callable[[CallRecord], None] | None = None,
        seed: int | None = None,
        reask: Template | None = None,
        watch: EndpointWatch | None = None,
    ) -> None:
        self.model = model
        self.settings = settings
        self.totals = CallTotals()
        self.on_record = on_record
        """Sees each call's record when it ends, however it ended."""
        self.on_start = on_start
        """Sees each call's record as it is sent (its node, schema, role and labels; no tokens yet)."""
        patient = watch is not None or isinstance(model, OpenAICompatibleChat)
        self.transport = Transport(settings, "model_call", watch=watch, patient=patient, sleep=sleep, seed=seed)
        """How requests reach the endpoint: retries, backoff, outages."""
        self._semaphore = asyncio.Semaphore(settings.max_concurrency)
        self._reask = reask or builtin_template("reask")

    @property
    def watch(self) -> EndpointWatch | None:
        """The endpoint's outage watch (None for a model that is no HTTP endpoint, such as a fake in tests)."""
        return self.transport.watch

    def build_messages(self, system: str, images: Sequence[ImagePart], text: str, head: str = "") -> list[BaseMessage]:
        """System prompt, then the user's ``head`` text, its images, and the rest of its text.

        The caller orders its prompt for the server's prefix cache: what its calls share first.
        """
        if not images:
            return [SystemMessage(content=system), HumanMessage(content=[{"type": "text", "text": head + text}])]
        content: list[str | dict[str, Any]] = [{"type": "text", "text": head}] if head else []
        content.extend({"type": "image_url", "image_url": {"url": image.data_url()}} for image in images)
        content.append({"type": "text", "text": text})
        return [SystemMessage(content=system), HumanMessage(content=content)]

    async def ask(
        self,
        schema: type[T],
        *,
        system: str,
        text: str,
        images: Sequence[ImagePart] = (),
        head: str = "",
        node: str = "",
        meta: dict[str, Any] | None = None,
        role: str = "",
        thinking: bool | None = None,
        temperature: float | None = None,
        logprobs: bool = False,
    ) -> Reply[T]:
        """Ask for one ``schema`` object; raises :class:`ModelReplyError` or :class:`EndpointError`.

        ``head`` is the user text sent before the images, ``text`` the rest (:meth:`build_messages`).
        ``thinking`` turns a reasoning model's thinking on or off for this call (vLLM's
        ``chat_template_kwargs.enable_thinking``); None sends nothing and leaves the server's default.
        ``temperature`` overrides the endpoint's sampling temperature for this call (None: the endpoint's).
        ``logprobs`` asks the server for the reply's token log-probabilities with the most likely
        alternatives at each position (:data:`~videoatlas.llm.logprobs.TOP_LOGPROBS`): :attr:`Reply.tokens`.
        """
        check_limits(images, self.settings)
        record = CallRecord(
            node=node,
            schema=schema.__name__,
            started_at=time.time(),
            images=len(images),
            image_pixels=sum(i.pixels for i in images),
            image_tokens=sum(image_tokens(i.width, i.height, merged_patch_px(self.settings.model)) for i in images),
            meta=dict(meta or {}),
            role=role,
            thinking=thinking,
        )
        messages = self.build_messages(system, images, text, head)
        began = time.perf_counter()
        if self.on_start is not None:
            self.on_start(record)
        try:
            value, tokens = await self._ask(schema, messages, record, temperature, logprobs)
            return Reply(value, record, tokens)
        except BaseException as exc:
            self._failed(record, exc)
            raise
        finally:
            self._finish(record, began)

    def _finish(self, record: CallRecord, began: float) -> None:
        """A call has ended, however: its latency, the totals, whoever hears of records, the log."""
        record.latency_s = time.perf_counter() - began
        self.totals.add(record)
        if self.on_record is not None:
            self.on_record(record)
        log.debug(
            "model_call",
            node=record.node,
            schema=record.schema,
            outcome=record.outcome,
            prompt_tokens=record.prompt_tokens,
            cached=record.cached_tokens,
            latency_s=round(record.latency_s, 3),
        )

    @staticmethod
    def _failed(record: CallRecord, exc: BaseException) -> None:
        """How a call that raised ``exc`` ended, in its record (and the record on the error, for its cost)."""
        if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
            record.outcome = CANCELLED  # the run was stopped while the call waited: no error of the call's
            return
        record.outcome = "failed"
        record.error = record.error or f"{type(exc).__name__}: {exc}"
        if isinstance(exc, VideoAtlasError):
            exc.record = record

    async def read_choice(
        self,
        *,
        text: str,
        instructions: str,
        options: Sequence[str],
        node: str = "",
        meta: dict[str, Any] | None = None,
        role: str = "",
    ) -> ChoiceRead | None:
        """Each option's probability as the endpoint's ``/v1/decisions`` reads ``text`` (:mod:`.decisions`).

        One ``choice`` question (``instructions``; each of ``options`` is a value). None where the endpoint
        does not serve the route (detected on the first decision to it, remembered for the process) and for
        a model that is no HTTP endpoint (a fake in tests). Any other failure raises as :meth:`ask`'s do
        (:class:`EndpointError`, :class:`~videoatlas.errors.EndpointDownError`). The call is recorded and
        counted as a chat call is; a request that only found the route missing is no call and is not.
        """
        post = getattr(self.model, "post_route", None)
        if post is None:
            return None
        async with decisions.detection(self.settings) as verdict:
            if verdict is False:
                return None
            record = CallRecord(
                node=node, schema=decisions.SCHEMA, started_at=time.time(), meta=dict(meta or {}), role=role
            )
            body = decisions.choice_body(self.settings.model, text, instructions, options, "answer")
            began = time.perf_counter()
            if verdict and self.on_start is not None:
                self.on_start(record)  # a detecting request is told of once it is known to be a call

            def ended(answered: bool) -> None:
                """The request was a call after all (an answer or a failure): told of, counted, logged."""
                if not verdict and self.on_start is not None:
                    self.on_start(record)
                if answered:
                    record.outcome = "ok"
                self._finish(record, began)

            try:
                answer = await self._decide(post, body, options, record)
            except BaseException as exc:
                self._failed(record, exc)
                ended(answered=False)
                raise
            if answer is None:
                return None
            ended(answered=True)
            return ChoiceRead(answer.probabilities, record)

    async def _decide(
        self,
        post: Callable[[str, dict[str, Any]], Awaitable[httpx.Response]],
        body: dict[str, Any],
        options: Sequence[str],
        record: CallRecord,
    ) -> decisions.ChoiceAnswer | None:
        """One decisions request through the transport; None (remembered) when the endpoint has no such route."""
        missing: list[openai.APIStatusError] = []

        async def request() -> httpx.Response | None:
            record.attempts += 1
            async with self._semaphore:
                try:
                    return await post(decisions.ROUTE, body)
                except openai.APIStatusError as exc:
                    if not decisions.not_served(exc):
                        raise
                    missing.append(exc)  # an answer, not a failure: no retry, no outage
                    return None

        def retried() -> None:
            record.retries += 1

        def exhausted(exc: Exception, attempts: int) -> Exception:
            return EndpointError(
                f"the decisions route of VLM endpoint {self.settings.base_url} failed after {attempts} attempts: "
                f"{describe(exc)}"
            )

        try:
            response = await self.transport.send(request, exhausted, retried)
        except openai.APIStatusError as exc:  # a refusal: the request is wrong (ours to fix)
            where = f"node {record.node}: " if record.node else ""
            raise EndpointError(
                f"{where}HTTP {exc.status_code}, the VLM endpoint refused the decisions request: "
                f"{server_message(exc)} (endpoint {self.settings.base_url})"
            ) from None
        if response is None:
            decisions.remember(self.settings, False, decisions.not_served_reason(missing[-1]))
            return None
        try:
            payload = response.json()
            answer = decisions.read_choice_answer(payload, options)
        except ValueError as exc:
            raise EndpointError(
                f"the VLM endpoint at {self.settings.base_url} sent an unreadable decisions answer: {exc}"
            ) from None
        decisions.remember(self.settings, True, f"HTTP {response.status_code}")
        record.prompt_tokens += answer.input_tokens
        record.cached_tokens += answer.cached_tokens
        record.completion_tokens += answer.output_tokens
        record.reply_text = json.dumps(payload["answers"], ensure_ascii=False)
        return answer

    async def _ask(
        self,
        schema: type[T],
        messages: list[BaseMessage],
        record: CallRecord,
        temperature: float | None = None,
        logprobs: bool = False,
    ) -> tuple[T, tuple[TokenLogprob, ...]]:
        fmt = response_format(schema, self.settings.strict_schema)
        sampling: dict[str, Any] = {} if temperature is None else {"temperature": temperature}
        if logprobs:
            sampling |= {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
        reply, tokens = await self._send(messages, fmt, record, sampling)
        record.reply_text = reply
        value, error = self._parse(schema, reply, record)
        if value is not None:
            return value, tokens
        followup = [
            *messages,
            AIMessage(content=reply),
            HumanMessage(content=self._reask.render(error=error)),
        ]
        second, tokens = await self._send(followup, fmt, record, sampling)
        record.reply_text = second
        value, error = self._parse(schema, second, record)
        if value is not None:
            record.outcome = "reasked"
            return value, tokens
        record.error = f"invalid reply after a re-ask: {error}"
        raise ModelReplyError(f"the model's reply to {schema.__name__} was not valid after a re-ask: {error}")

    def _parse(self, schema: type[T], text: str, record: CallRecord) -> tuple[T | None, str]:
        """The reply as ``schema``: as sent, else repaired (the outcome says which); or the last error."""

        def readings() -> Iterator[tuple[str, Outcome]]:
            yield text, "ok"
            repaired = repair_json(text)  # only when the reply as sent did not parse
            if repaired is not None and repaired != text:
                yield repaired, "repaired"

        error = ""
        for reading, outcome in readings():
            try:
                value = schema.model_validate_json(reading)
            except ValidationError as exc:
                error = short_error(exc)
                continue
            record.outcome = outcome
            return value, ""
        record.parse_errors.append(error)
        return None, error

    async def _send(
        self,
        messages: list[BaseMessage],
        fmt: dict[str, Any],
        record: CallRecord,
        sampling: dict[str, Any] | None = None,
    ) -> tuple[str, tuple[TokenLogprob, ...]]:
        """The reply's text (its reasoning taken out into ``record``) and its tokens' log-probabilities, if sent."""

        async def request() -> BaseMessage:
            record.attempts += 1
            async with self._semaphore:
                return await self.model.ainvoke(
                    messages, response_format=fmt, **_thinking_kwargs(record), **(sampling or {})
                )

        def retried() -> None:
            record.retries += 1

        def exhausted(exc: Exception, attempts: int) -> Exception:
            return EndpointError(
                f"VLM endpoint {self.settings.base_url} failed after {attempts} attempts: {describe(exc)}"
            )

        try:
            message = await self.transport.send(request, exhausted, retried)
        except openai.APIStatusError as exc:  # a refusal
            raise await self._translate(exc, record) from None
        prompt, completion, cached = _usage(message)
        record.prompt_tokens += prompt
        record.completion_tokens += completion
        record.cached_tokens += cached
        content = message.content
        tokens = tuple(message.response_metadata.get("logprobs") or ())
        return _take_reasoning(message, content if isinstance(content, str) else str(content), record), tokens

    async def _translate(self, exc: openai.APIStatusError, record: CallRecord | None = None) -> Exception:
        """Turn a non-retryable failure into a user-facing error with what the user needs to fix it.

        A refusal names the node that asked, what the server refused (the reply schema, the number of
        images, the prompt's length...) and the server's own message, on one line.
        """
        if isinstance(exc, openai.NotFoundError) or (
            isinstance(exc, openai.BadRequestError) and "model" in str(exc).lower() and "exist" in str(exc).lower()
        ):
            served = await self.served_models_or_none()
            if served is not None and self.settings.model not in served:
                return ModelNotServedError(
                    f"model {self.settings.model!r} is not served at {self.settings.base_url}; "
                    f"served: {', '.join(served) or 'none'}"
                )
        where = f"node {record.node}: " if record is not None and record.node else ""
        what = refused_feature(exc, record.schema if record is not None else "")
        return EndpointError(
            f"{where}HTTP {exc.status_code}, the VLM endpoint refused {what}: {server_message(exc)} "
            f"(endpoint {self.settings.base_url})" + route_hint(exc, self.settings.base_url)
        )

    async def served_models_or_none(self) -> list[str] | None:
        """The models the endpoint lists, or None when this chat model cannot tell."""
        lister = getattr(self.model, "served_models", None)
        if lister is None:
            return None
        try:
            served: list[str] = await lister()
        except openai.OpenAIError:
            return None
        return served

    async def check_model(self) -> str:
        """Make sure the endpoint is reachable and serves our model; returns the model id used.

        With no model configured, the server's first listed model is chosen.
        """
        lister = getattr(self.model, "served_models", None)
        if lister is None:
            return self.settings.model
        attempts = 0

        async def request() -> list[str]:
            nonlocal attempts
            attempts += 1
            listed: list[str] = await lister()
            return listed

        def unreachable(exc: Exception, tries: int) -> Exception:
            # No answer at all (nothing listening, a wrong host) is told apart from a server that errs.
            kind = EndpointUnreachableError if isinstance(exc, openai.APIConnectionError) else EndpointError
            return kind(
                f"cannot reach the VLM endpoint at {self.settings.base_url} "
                f"after {tries} attempt{'s' if tries != 1 else ''}: {describe(exc)}"
                + route_hint(exc, self.settings.base_url)
            )

        try:
            if self.settings.base_url == DEFAULT_BASE_URL:
                # Nobody named this endpoint: when nothing listens there, say so at once rather than
                # retry a guess (the message names the ways to give one).
                try:
                    served = await request()
                except openai.APIConnectionError as exc:
                    raise unreachable(exc, attempts) from None
            else:
                served = await self.transport.send(request, unreachable)
        except openai.OpenAIError as exc:  # a refusal (a wrong path answers 404)
            raise unreachable(exc, attempts) from None
        if not self.settings.model:
            if not served:
                raise ModelNotServedError(f"the endpoint at {self.settings.base_url} serves no model")
            self.settings = self.settings.with_model(served[0])
            if hasattr(self.model, "settings"):
                self.model.settings = self.settings
        elif self.settings.model not in served:
            raise ModelNotServedError(
                f"model {self.settings.model!r} is not served at {self.settings.base_url}; "
                f"served: {', '.join(served) or 'none'}"
            )
        return self.settings.model


def _thinking_kwargs(record: CallRecord) -> dict[str, Any]:
    """What the request says about thinking: nothing unless the call's setting says on or off."""
    if record.thinking is None:
        return {}
    return {"chat_template_kwargs": {"enable_thinking": record.thinking}}


def _take_reasoning(message: BaseMessage, content: str, record: CallRecord) -> str:
    """The answer in a reply's content; its reasoning (a field of its own or a think block) goes to ``record``.

    Reasoning tokens are the server's count when it gives one, else estimated from the text (and marked so).
    """
    thought, answer = split_reasoning(content)
    field = message.additional_kwargs.get("reasoning_content")
    parts = [p for p in (field if isinstance(field, str) else "", thought) if p]
    details = (getattr(message, "usage_metadata", None) or {}).get("output_token_details") or {}
    counted = details.get("reasoning")
    if counted is not None:
        record.reasoning_tokens += int(counted)
    elif parts:
        record.reasoning_tokens += sum(estimate_tokens(p) for p in parts)
        record.reasoning_tokens_estimated = True
    if parts:
        reasoning = "\n\n".join(parts)
        record.reasoning = f"{record.reasoning}\n\n{reasoning}" if record.reasoning else reasoning
    if message.response_metadata.get("finish_reason") == "length":
        log.warning(
            "model_reply_cut",
            node=record.node,
            reasoning_tokens=record.reasoning_tokens,
            answered=bool(answer.strip()),
            hint="the reply reached its token limit; with thinking on, raise thinking_max_tokens",
        )
    return answer
