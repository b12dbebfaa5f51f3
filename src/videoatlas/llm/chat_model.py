"""A langchain-core chat model over the official ``openai`` client, for vLLM's OpenAI-compatible server.

Why the ``openai`` client under a thin :class:`BaseChatModel` rather than ``langchain-openai``:
we need the raw reply text (to repair JSON locally before judging it), vLLM's
``usage.prompt_tokens_details.cached_tokens`` exactly as the server reports it, ``response_format``
passed through untouched, and a retry policy of our own (jittered backoff, no retry on 4xx) instead
of a library's hidden one. The openai client is built with ``max_retries=0`` so that every attempt
is ours to count. Being a ``BaseChatModel`` keeps the rest of the code testable with
langchain-core's fake chat models.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import openai
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, PrivateAttr

from videoatlas.llm.logprobs import read_tokens
from videoatlas.llm.reasoning import REASONING_FIELDS, field_reasoning
from videoatlas.llm.settings import EndpointSettings


class OpenAICompatibleChat(BaseChatModel):
    """Chat completions against one OpenAI-compatible endpoint (vLLM, the stand-in, or OpenAI itself)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    settings: EndpointSettings
    _async_client: openai.AsyncOpenAI | None = PrivateAttr(default=None)
    _sync_client: openai.OpenAI | None = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        return "openai-compatible"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"base_url": self.settings.base_url, "model": self.settings.model}

    def _client_kwargs(self) -> dict[str, Any]:
        return {
            "base_url": self.settings.base_url,
            "api_key": self.settings.api_key or "EMPTY",
            "timeout": self.settings.timeout_s,
            "max_retries": 0,
        }

    @property
    def async_client(self) -> openai.AsyncOpenAI:
        """The async client, created on first use (never at import)."""
        if self._async_client is None:
            self._async_client = openai.AsyncOpenAI(**self._client_kwargs())
        return self._async_client

    @property
    def sync_client(self) -> openai.OpenAI:
        """The blocking client, created on first use."""
        if self._sync_client is None:
            self._sync_client = openai.OpenAI(**self._client_kwargs())
        return self._sync_client

    def _request(self, messages: Sequence[BaseMessage], stop: list[str] | None, **kwargs: Any) -> dict[str, Any]:
        # vLLM's chat template arguments are no OpenAI parameter: the openai client sends them in the body as
        # given. vLLM accepts them for any model and drops those its template does not declare.
        template_kwargs = kwargs.pop("chat_template_kwargs", None)
        thinking = bool(template_kwargs and template_kwargs.get("enable_thinking"))
        budget = self.settings.thinking_max_tokens if thinking else self.settings.max_tokens
        request: dict[str, Any] = {
            "model": self.settings.model,
            "messages": convert_to_openai_messages(list(messages)),
            "temperature": kwargs.pop("temperature", self.settings.temperature),
            # max_tokens is deprecated in vLLM (and OpenAI) in favour of max_completion_tokens.
            "max_completion_tokens": kwargs.pop("max_completion_tokens", kwargs.pop("max_tokens", budget)),
        }
        if stop:
            request["stop"] = stop
        response_format = kwargs.pop("response_format", None)
        if response_format is not None:
            request["response_format"] = response_format
        if template_kwargs:
            request["extra_body"] = {**kwargs.pop("extra_body", {}), "chat_template_kwargs": template_kwargs}
        request.update(kwargs)
        return request

    @staticmethod
    def _result(response: Any) -> ChatResult:
        choice = response.choices[0]
        text = choice.message.content or ""
        usage = response.usage
        usage_metadata: UsageMetadata | None = None
        cached = 0
        reasoning_tokens: int | None = None
        if usage is not None:
            details = getattr(usage, "prompt_tokens_details", None)
            cached = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
            usage_metadata = UsageMetadata(
                input_tokens=int(usage.prompt_tokens or 0),
                output_tokens=int(usage.completion_tokens or 0),
                total_tokens=int(usage.total_tokens or 0),
                input_token_details={"cache_read": cached},
            )
            counted = getattr(getattr(usage, "completion_tokens_details", None), "reasoning_tokens", None)
            if counted is not None:
                reasoning_tokens = int(counted)
                usage_metadata["output_token_details"] = {"reasoning": reasoning_tokens}
        # vLLM's own message fields are no part of the openai types: they arrive as the message's extra attributes.
        reasoning = field_reasoning({name: getattr(choice.message, name, None) for name in REASONING_FIELDS})
        message = AIMessage(
            content=text,
            additional_kwargs={"reasoning_content": reasoning} if reasoning else {},
            usage_metadata=usage_metadata,
            response_metadata={
                "model_name": response.model,
                "finish_reason": choice.finish_reason,
                "cached_tokens": cached,
                "reasoning_tokens": reasoning_tokens,
                "logprobs": read_tokens(getattr(choice, "logprobs", None)),
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        response = await self.async_client.chat.completions.create(**self._request(messages, stop, **kwargs))
        return self._result(response)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        response = self.sync_client.chat.completions.create(**self._request(messages, stop, **kwargs))
        return self._result(response)

    async def served_models(self) -> list[str]:
        """The model ids the endpoint lists at ``GET /models``."""
        page = await self.async_client.models.list()
        return [m.id for m in page.data]

    async def post_route(self, path: str, body: dict[str, Any]) -> httpx.Response:
        """POST the JSON ``body`` to another route of the endpoint (``path`` under its base URL: ``/decisions``).

        Through the chat calls' client (its address, key and timeout, no retries of its own): an HTTP error
        raises as theirs do (``openai.APIStatusError``), for the caller's transport policy to read.
        """
        return await self.async_client.post(path, cast_to=httpx.Response, body=body)

    async def aclose(self) -> None:
        """Close the HTTP connection pools."""
        if self._async_client is not None:
            await self._async_client.close()
        if self._sync_client is not None:
            self._sync_client.close()
